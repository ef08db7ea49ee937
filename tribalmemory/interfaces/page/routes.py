"""``GET /`` (the page) and ``/page/...`` (its files), with headers that keep it self-contained."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

STATIC_DIR = Path(__file__).parent / "static"
PREFIX = "/page"

# Everything comes from the daemon itself: no CDN, no inline script, no framing (clickjacking).
# Inline styles are allowed because the timeline library positions its bars with them.
POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def with_headers(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response


async def index(request: Request) -> Response:
    return with_headers(FileResponse(STATIC_DIR / "index.html", media_type="text/html"))


class PageFiles:
    """The page's static files with :data:`HEADERS` on every answer (404s included)."""

    def __init__(self) -> None:
        self.files = StaticFiles(directory=STATIC_DIR)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.lower().encode(), v.encode())
                    for k, v in HEADERS.items()
                    if k.lower().encode() not in names
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.files(scope, receive, send_with_headers)


def routes() -> list[BaseRoute]:
    """The page's routes, to mount on the daemon's app (no auth: the page holds no data)."""
    return [Route("/", index, methods=["GET", "HEAD"]), Mount(PREFIX, app=PageFiles())]
