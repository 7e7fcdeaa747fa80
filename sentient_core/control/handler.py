"""Answer control commands for a learner: the same verbs for ``serve`` and ``learn``."""

from __future__ import annotations

from typing import Protocol

import msgspec

from sentient_core.control.channel import ControlReply, Handler
from sentient_core.control.status import ActivityTracker, LearnerStatus, learner_status

__all__ = ["Command", "Controlled", "Foreground", "handler_for", "pause_learner", "resume_learner"]


class Command(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What a control verb did: ``ok`` (False: nothing to do), the state after it, why."""

    ok: bool
    state: str
    message: str


class Controlled(Protocol):
    """What the control channel (and the server) can ask of a learner's owner."""

    def status(self) -> LearnerStatus: ...
    def pause(self) -> Command: ...
    def resume(self) -> Command: ...
    def stop(self) -> Command: ...


def handler_for(target: Controlled) -> Handler:
    """A channel handler calling ``target``'s verbs."""

    def handle(op: str) -> ControlReply:
        if op == "ping":
            return ControlReply(ok=True, state=target.status().state, message="pong")
        if op == "status":
            status = target.status()
            return ControlReply(ok=True, state=status.state, status=msgspec.to_builtins(status))
        if op == "login":  # only `serve` has a panel; its Server answers this op itself
            return ControlReply(
                ok=False,
                state=target.status().state,
                message="no panel here: this learner runs under `learn`, not `serve`",
            )
        done: Command = getattr(target, op)()
        return ControlReply(ok=done.ok, state=done.state, message=done.message)

    return handle


def pause_learner(learner) -> Command:
    """Pause a running learner (the current iteration finishes first)."""
    if not learner.running:
        return Command(ok=False, state=learner.state, message="not running: nothing to pause")
    if learner.paused:
        return Command(ok=False, state=learner.state, message="already paused")
    learner.pause()
    return Command(
        ok=True, state=learner.state, message="pausing: no iteration starts until resume"
    )


def resume_learner(learner) -> Command:
    """Resume a paused learner (never a second loop)."""
    if not learner.running:
        return Command(ok=False, state=learner.state, message="not running: nothing to resume")
    if not learner.paused:
        return Command(ok=False, state=learner.state, message="not paused")
    learner.resume()
    return Command(ok=True, state=learner.state, message="resumed")


class Foreground:
    """The learner of ``cli.py learn`` (running in the main thread) behind the channel.

    ``stop`` asks the loop to end after the current step; ``learn`` then prints
    its summary and exits as after its last iteration.
    """

    def __init__(self, learner, data_dir: str) -> None:
        self.learner = learner
        self.data_dir = data_dir
        self.activity = ActivityTracker(learner.events)

    def status(self) -> LearnerStatus:
        return learner_status(
            self.learner, mode="learn", data_dir=self.data_dir, activity=self.activity.latest()
        )

    def pause(self) -> Command:
        return pause_learner(self.learner)

    def resume(self) -> Command:
        return resume_learner(self.learner)

    def stop(self) -> Command:
        if not self.learner.running:
            return Command(ok=False, state=self.learner.state, message="not running")
        self.learner.stop()
        return Command(ok=True, state="stopping", message="stopping after the current step")
