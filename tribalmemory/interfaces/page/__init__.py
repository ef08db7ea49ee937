"""The daemon's web page at ``/``: a timeline of episodes, an episode view, spend and health.

The page is static (HTML, CSS and JavaScript in ``static/``, the charting libraries vendored in
``static/vendor/``) and holds no data: it calls the ``/v1`` routes from the browser with the
token the user typed (kept in ``sessionStorage``, sent as ``Authorization: Bearer``). Host,
Origin and Content-Type are checked for it as for every request (:mod:`..guard`).
"""

from __future__ import annotations

from .routes import STATIC_DIR, routes

__all__ = ["STATIC_DIR", "routes"]
