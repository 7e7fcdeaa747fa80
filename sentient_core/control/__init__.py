"""Controlling a learner that runs in another process: a Unix socket in its data directory.

Modules
-------
channel   :class:`ControlServer` (the learner's side: ``control.lock`` + ``control.sock``,
          mode 0600) and :func:`request` (a client's side); stale sockets handled
status    :class:`LearnerStatus`, the one status record the CLI and the server show
handler   the verbs (status, pause, resume, stop) over a learner, for ``serve`` and ``learn``
"""

from sentient_core.control.channel import (
    LOCK_NAME,
    SOCKET_NAME,
    ControlError,
    ControlReply,
    ControlRequest,
    ControlServer,
    LearnerBusyError,
    NoLearnerError,
    check_free,
    request,
)
from sentient_core.control.handler import (
    Command,
    Controlled,
    Foreground,
    handler_for,
    pause_learner,
    resume_learner,
)
from sentient_core.control.status import Activity, ActivityTracker, LearnerStatus, learner_status

__all__ = [
    "LOCK_NAME",
    "SOCKET_NAME",
    "Activity",
    "ActivityTracker",
    "Command",
    "ControlError",
    "ControlReply",
    "ControlRequest",
    "ControlServer",
    "Controlled",
    "Foreground",
    "LearnerBusyError",
    "LearnerStatus",
    "NoLearnerError",
    "check_free",
    "handler_for",
    "learner_status",
    "pause_learner",
    "request",
    "resume_learner",
]
