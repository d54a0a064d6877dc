"""Open an HTML file in a real headless Chromium and check its figures (test helper).

Talks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file descriptors 3 and 4,
NUL-separated JSON), so it needs nothing but Debian's ``chromium`` and Pillow (which comes with
matplotlib): no websocket client, no Playwright download.

``inspect_report(path)`` loads the page from ``file://``, waits for it to finish loading, asks
the page for every ``<img>`` (``complete``, ``naturalWidth``/``naturalHeight``, its box), takes a
screenshot of each image's box, and counts the pixels that are not white. It also records
every network request the page made (a self-contained report makes none beyond itself and its
``data:`` images).
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


class Chromium:
    """A headless Chromium driven through the DevTools pipe (``with Chromium() as b: ...``)."""

    def __init__(self, executable: str | None = None, timeout: float = 60.0):
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise FileNotFoundError("chromium not found")
        self.timeout = timeout
        self.events: list[dict] = []
        self._id = 0
        self._buf = b""

    def __enter__(self):
        self._profile = tempfile.mkdtemp(prefix="shiftlearn-chromium-")
        r_in, w_in = os.pipe()       # we write, chromium reads (fd 3)
        r_out, w_out = os.pipe()     # chromium writes (fd 4), we read

        def child():
            os.dup2(r_in, 3)
            os.dup2(w_out, 4)

        self.proc = subprocess.Popen(
            [self.executable, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=child, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(r_in)
        os.close(w_out)
        self._w = os.fdopen(w_in, "wb", buffering=0)
        self._r = os.fdopen(r_out, "rb", buffering=0)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - closing a browser that already went away
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._w.close()
        self._r.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _message(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = self._r.read(1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._w.write(json.dumps(msg).encode() + b"\0")
        while True:
            d = self._message()
            if d.get("id") == self._id:
                if "error" in d:
                    raise RuntimeError(f"{method}: {d['error']}")
                return d.get("result", {})
            if "method" in d:
                self.events.append(d)

    def wait_for(self, event: str, session: str) -> dict:
        for d in self.events:
            if d.get("method") == event and d.get("sessionId") == session:
                return d
        while True:
            d = self._message()
            if "method" in d:
                self.events.append(d)
                if d["method"] == event and d.get("sessionId") == session:
                    return d


def _nonwhite_fraction(png: bytes) -> float:
    import numpy as np
    from PIL import Image

    px = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    return float(np.mean(px.min(axis=2) < 235)) if px.size else 0.0


def inspect_report(path: str | Path, *, width: int = 1200, screenshot: str | Path | None = None
                   ) -> dict:
    """Load ``path`` in headless Chromium; returns ``{"figures": [...], "requests": [...],
    "title": ..., "page": (w, h)}``; each figure ``{id, alt, complete, natural: (w, h),
    box: (x, y, w, h), nonwhite}`` (``nonwhite``: fraction of non-white pixels in the image's
    screenshot)."""
    url = Path(path).resolve().as_uri()
    with Chromium() as b:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        b.send("Page.enable", session=s)
        b.send("Network.enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
               session=s)
        b.send("Page.navigate", {"url": url}, session=s)
        b.wait_for("Page.loadEventFired", s)
        js = ("JSON.stringify({title: document.title, w: document.documentElement.scrollWidth,"
              " h: document.documentElement.scrollHeight, imgs: [...document.images].map(i => "
              "({id: i.id, alt: i.alt, complete: i.complete, nw: i.naturalWidth, "
              "nh: i.naturalHeight, box: (r => [r.x + scrollX, r.y + scrollY, r.width, "
              "r.height])(i.getBoundingClientRect())}))})")
        answer = b.send("Runtime.evaluate", {"expression": js, "returnByValue": True},
                        session=s)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"the page's script failed: {answer['exceptionDetails']}")
        page = json.loads(answer["result"]["value"])
        figures = []
        for im in page["imgs"]:
            x, y, w, h = im["box"]
            shot = b.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": x, "y": y, "width": max(w, 1), "height": max(h, 1), "scale": 1}},
                session=s)
            figures.append({"id": im["id"], "alt": im["alt"], "complete": im["complete"],
                            "natural": (im["nw"], im["nh"]), "box": (x, y, w, h),
                            "nonwhite": _nonwhite_fraction(base64.b64decode(shot["data"]))})
        if screenshot is not None:
            full = b.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": page["w"], "height": page["h"], "scale": 1}},
                session=s)
            Path(screenshot).write_bytes(base64.b64decode(full["data"]))
        requests = [e["params"]["request"]["url"] for e in b.events
                    if e.get("method") == "Network.requestWillBeSent"]
    return {"title": page["title"], "page": (page["w"], page["h"]), "figures": figures,
            "requests": requests}
