"""The fleet report in a real browser: headless Chromium opens the page
`fleet-dispatch report` made from a fixture fleet (fleet_fixture.py: three
machines, a few hundred jobs of every outcome, a listener gap) and this
script reads its DOM over the DevTools protocol: the lanes, the bars per
outcome, the failures table, the totals; that nothing logs an error to the
console; that the page fits 1280 and 390 pixel wide windows. A second page,
made from a fleet whose every text holds markup and script, must render it
all as text and run none of it. Screenshots are kept in the artifact folder.

    python3 tests/engines/test_report.py BINARY ARTIFACTS [--docs PNG]

Python 3 standard library only: the DevTools protocol's WebSocket is spoken
here, by hand. Exits 1 on the first failed check, naming it.
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet_fixture  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def fail(what):
    print(f"test_report: FAIL: {what}", file=sys.stderr)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)
    print(f"ok - {what}")


# ---------------------------------------------------------------- the DevTools protocol


class Cdp:
    """One page's DevTools session over a WebSocket (RFC 6455, client side)."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                fail("the DevTools WebSocket closed during its handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            fail(f"the DevTools WebSocket refused: {head[:200]!r}")
        self.next_id = 0
        self.events = []

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                fail("the DevTools WebSocket closed")
            data += chunk
        return data

    def _send(self, obj):
        data = json.dumps(obj).encode()
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _recv(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                fail("the browser closed the DevTools session")
            if opcode in (0x9, 0xA):  # ping, pong: not part of a message
                continue
            message += payload
            if b0 & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.next_id += 1
        me = self.next_id
        self._send({"id": me, "method": method, "params": params})
        while True:
            m = self._recv()
            if m.get("id") == me:
                if "error" in m:
                    fail(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.events.append(self._recv())
        fail(f"no {name} within {timeout} s")

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            fail(f"evaluating {expression[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self):
        """Console errors, exceptions and browser log errors seen so far."""
        found = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                found.append(p["exceptionDetails"].get("text"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                found.append(str(p.get("args")))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                found.append(p["entry"].get("text"))
        return found


class Browser:
    def __init__(self, tmp):
        self.profile = Path(tmp) / "profile"
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > end or self.proc.poll() is not None:
                self.close()
                fail("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        pages = []
        while not pages and time.monotonic() < end:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            time.sleep(0.1)
        if not pages:
            fail("chromium has no page to drive")
        self.page = Cdp(pages[0]["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log"):
            self.page.call(f"{domain}.enable")

    def open(self, path, width):
        p = self.page
        p.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
               deviceScaleFactor=1, mobile=width < 600)
        p.events.clear()
        p.call("Page.navigate", url=Path(path).resolve().as_uri())
        p.wait_event("Page.loadEventFired")

    def screenshot(self, out, width, height=None):
        size = self.page.call("Page.getLayoutMetrics")["cssContentSize"]
        h = min(int(size["height"]), height or 6000)
        shot = self.page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                              clip={"x": 0, "y": 0, "width": width, "height": h, "scale": 1})
        Path(out).write_bytes(base64.b64decode(shot["data"]))
        print(f"# screenshot {out} ({width}x{h})")

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ---------------------------------------------------------------- the fleet


def make_page(binary, tmp, name, out, hostile):
    root = Path(tmp) / name
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEET_DISPATCH_")}
    env.update(FLEET_DISPATCH_ROOT=str(root / "root"), FLEET_DISPATCH_KEY_FILE=str(root / "key"),
               FLEET_DISPATCH_STATE_DIR=str(root / "state"), FLEET_DISPATCH_MACHINE="PC",
               HOME=str(root), NO_COLOR="1")
    root.mkdir(parents=True)
    subprocess.run([binary, "keygen"], env=env, check=True, stdout=subprocess.DEVNULL)
    key = (root / "key").read_bytes().rstrip(b" \t\r\n\f\v")
    manifest = fleet_fixture.write(root / "root", key, hostile=hostile)
    subprocess.run([binary, "report", "--out", str(out)], env=env, check=True)
    data = json.loads(subprocess.run([binary, "--json", "report"], env=env, check=True,
                                     capture_output=True, text=True).stdout)
    return manifest, data


def lane_counts(b):
    return b.page.js("""(() => {
      const out = {};
      for (const s of document.querySelectorAll('section.lane')) {
        const c = {};
        for (const g of s.querySelectorAll('g.job')) c[g.dataset.outcome] = (c[g.dataset.outcome] || 0) + 1;
        out[s.dataset.lane] = c;
      }
      return out; })()""")


def check_fleet_page(b, page, manifest, art, docs):
    for width in (1280, 390):
        b.open(page, width)
        lanes = b.page.js("[...document.querySelectorAll('section.lane')].map(s => s.dataset.lane)")
        check(lanes == sorted(fleet_fixture.MACHINES), f"{width}px: one lane per machine, by name: {lanes}")
        counts = lane_counts(b)
        for m, want in manifest["machines"].items():
            got = {k: v for k, v in counts.get(m, {}).items() if v}
            check(got == {k: v for k, v in want.items() if v},
                  f"{width}px: {m}'s bars per outcome are the fixture's: {got}")
        rows = b.page.js("document.querySelectorAll('#failures tbody tr').length")
        check(rows == min(200, manifest["not_well"]),
              f"{width}px: the failures table lists the {rows} jobs that did not end well")
        reasons = b.page.js("[...document.querySelectorAll('#failures tbody tr')].map(r => r.cells[5].textContent)")
        check(all(r.strip() for r in reasons), f"{width}px: every failure has its reason")
        stderr = b.page.js("[...document.querySelectorAll('#failures tbody tr td:last-child')]"
                           ".filter(c => c.textContent.includes('went wrong')).length")
        check(stderr > 0, f"{width}px: the table shows the start of stderr tails ({stderr})")
        totals = b.page.js("""Object.fromEntries([...document.querySelectorAll('#totals tbody tr')].map(r =>
            [r.dataset.lane, Object.fromEntries([...r.querySelectorAll('td[data-outcome]')].map(
              c => [c.dataset.outcome, +c.textContent]))]))""")
        for m, want in manifest["machines"].items():
            check(totals[m] == want, f"{width}px: {m}'s totals are the fixture's")
        gaps = b.page.js("document.querySelectorAll('section.lane[data-lane=NAS] rect.gap').length")
        check(gaps >= 2, f"{width}px: NAS shows its listener gap and its silence ({gaps} gaps)")
        restarts = b.page.js("document.querySelectorAll('section.lane[data-lane=NAS] rect.restart').length")
        check(restarts >= 2, f"{width}px: NAS shows its restarts ({restarts})")
        unverified = b.page.js("document.getElementById('unverified').textContent")
        check(unverified.startswith(str(manifest["unverified"])), f"{width}px: unverified files: {unverified}")
        hover = b.page.js("document.querySelector('section.lane g.job title').textContent")
        check(" · " in hover and "started" in hover or "never started" in hover,
              f"{width}px: a bar's hover text names the job: {hover[:80]}")
        listed = b.page.js("document.querySelectorAll('section.lane details li').length")
        bars = sum(sum(c.values()) for c in counts.values())
        check(listed == bars, f"{width}px: every bar is also listed as text ({listed})")
        wide = b.page.js("document.documentElement.scrollWidth")
        check(wide <= width, f"{width}px: the page does not scroll sideways (scrollWidth {wide})")
        svg = b.page.js("Math.min(...[...document.querySelectorAll('section.lane svg')]"
                        ".map(s => s.getBoundingClientRect().width))")
        check(svg >= width * 0.8, f"{width}px: the lanes use the page's width ({svg:.0f}px)")
        errors = b.page.errors()
        check(not errors, f"{width}px: no console error ({errors[:3]})")
        b.screenshot(art / f"report-{width}.png", width)
        if docs and width == 1280:
            b.screenshot(docs, width, height=1500)


def check_hostile_page(b, page, art):
    b.open(page, 1280)
    p = b.page
    check(p.js("document.title") == "Fleet report", "hostile: the title is the page's own")
    check(p.js("typeof window.pwned") == "undefined", "hostile: no planted script ran")
    check(p.js("document.body.dataset.pwned") is None, "hostile: no planted handler ran")
    found = p.js("document.querySelectorAll('script,img,iframe,object,embed,b').length")
    check(found == 0, f"hostile: no planted element rendered ({found})")
    svgs = p.js("document.querySelectorAll('svg').length")
    lanes = p.js("document.querySelectorAll('section.lane').length")
    check(svgs == lanes + 1, f"hostile: only the page's own drawings ({svgs} svg)")
    handlers = p.js("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes])"
                    ".filter(a => a.name.startsWith('on')).length")
    check(handlers == 0, f"hostile: no element has an event handler ({handlers})")
    text = p.js("document.body.textContent")
    check("<script>document.title='pwned'" in text and "<img src=x onerror=" in text,
          "hostile: the planted markup is shown as text")
    titles = p.js("[...document.querySelectorAll('title')].slice(1, 4).map(t => t.textContent)")
    check(titles and all("<script>" in t for t in titles), "hostile: hover texts hold the markup as text")
    errors = p.errors()
    check(not errors, f"hostile: no console error, no blocked script ({errors[:3]})")
    b.screenshot(art / "hostile-1280.png", 1280, height=2500)


def main():
    if len(sys.argv) < 3:
        fail("usage: test_report.py BINARY ARTIFACTS [--docs PNG]")
    binary, art = sys.argv[1], Path(sys.argv[2])
    docs = Path(sys.argv[sys.argv.index("--docs") + 1]) if "--docs" in sys.argv else None
    if not CHROMIUM:
        fail("no chromium on PATH: the browser test did not run")
    art.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fleet-report-") as tmp:
        fleet_page, hostile_page = art / "fleet-report.html", art / "hostile-report.html"
        manifest, data = make_page(binary, tmp, "fleet", fleet_page, hostile=False)
        check(len(data["lanes"]) == 3 and data["unverifiedFiles"] == manifest["unverified"],
              "report --json: three lanes and the unverified file counted")
        make_page(binary, tmp, "hostile", hostile_page, hostile=True)
        b = Browser(tmp)
        try:
            check_fleet_page(b, fleet_page, manifest, art, docs)
            check_hostile_page(b, hostile_page, art)
        finally:
            b.close()
    print("test_report: all checks passed")


if __name__ == "__main__":
    main()
