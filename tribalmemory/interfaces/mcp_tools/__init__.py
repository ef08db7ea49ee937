"""The MCP tools: one typed function per tool, each calling one TribalAPI method.


Each parameter's JSON schema (type, enum, range, default, description) is the one of the same
field of a request model in :mod:`tribalmemory.shapes`, and each tool's ``output_schema`` is its
response model there. pydantic does not enforce the parameter schemas: every value reaches
:class:`~tribalmemory.api.TribalAPI` unchanged, which validates it with the same messages as
the HTTP API. An argument a tool does not declare is refused (:class:`ToolServer`).

The parts:

- :mod:`.table`: the tool table (:data:`TOOLS`: name, annotations, request model of each tool)
  and :func:`register_tools`.
- :mod:`.memories`, :mod:`.episodes`, :mod:`.overview`, :mod:`.entities`, :mod:`.causes`:
  the tool functions, by family.
- :mod:`.params`: parameters advertised with a request field's schema (:func:`arg`, ``RAW``,
  :func:`with_fields`).
- :mod:`.sessions`: the agent's session and name; :mod:`.env`: what a server's tools share.
- :mod:`.server`: :class:`ToolServer`; :mod:`.errors`: error text and :class:`ApiCaller`.

To add a tool: add one function to its family's list whose parameters are
``Annotated[<type>, RAW, arg(<Request model>, "<field>")]``, whose return annotation is its
response model, and which returns ``await call("<api method>", ...)``; then add its entry to
:data:`TOOLS`. A tool given its request model (``Tool(name, annotations, Model)``) whose
function ends in ``**passed`` takes every other field of the model as well, advertised with its
schema and passed on unchanged (:func:`with_fields`): a field added to the model reaches the tool
without editing it.
"""

from .errors import DEFAULT_HINT, HINTS, INTERNAL_ERROR, ApiCaller, ApiProvider, error_text
from .params import RAW, SERVER_FILLED, arg, with_fields
from .server import ToolServer
from .sessions import client_info, client_name, client_session, session_key
from .table import DELETE, READ, TOOLS, WRITE, Tool, register_tools

__all__ = [
    "DEFAULT_HINT",
    "DELETE",
    "HINTS",
    "INTERNAL_ERROR",
    "RAW",
    "READ",
    "SERVER_FILLED",
    "TOOLS",
    "WRITE",
    "ApiCaller",
    "ApiProvider",
    "Tool",
    "ToolServer",
    "arg",
    "client_info",
    "client_name",
    "client_session",
    "error_text",
    "register_tools",
    "session_key",
    "with_fields",
]
