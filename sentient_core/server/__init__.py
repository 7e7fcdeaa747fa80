"""``cli.py serve``: one learner over a data directory, an HTTP API, a live panel.

Needs the ``server`` extra (``pip install 'sentient-core[server]'``: Starlette,
uvicorn, sse-starlette).

Modules
-------
host      :class:`LearnerHost`: the learner, its event bus and the flusher; every verb
security  :class:`Guard`: Host/Origin checks, token or panel cookie + CSRF, body limits
stream    :class:`EventFeed`: the audit log as Server-Sent Events (ids = sequences)
app       :func:`create_app`: the routes (msgspec request/response structs in ``schemas``)
metrics   the Prometheus text exposition
run       :class:`Server`: core + host + control socket + uvicorn on a bound socket
static/   the panel (HTML, CSS, JS; no build step, nothing fetched from the network)
"""

from sentient_core.server.app import create_app
from sentient_core.server.host import LearnerHost
from sentient_core.server.run import Server, ServerError
from sentient_core.server.security import SecurityPolicy, plan

__all__ = ["LearnerHost", "SecurityPolicy", "Server", "ServerError", "create_app", "plan"]
