"""Opens an HTML report in Debian's headless Chromium and checks it as a reader's browser would.

Usage: browser_check.py REPORT.html CHECK.json [--expect-charts a,b,...] [--screenshot OUT.png]

Drives Chromium over the DevTools protocol (python3-websocket) and fails (exit 1, one line per problem)
on any console error, uncaught exception, failed request or request that leaves the file; when a chart
container has no drawn SVG; when a finding of CHECK.json (the `--format json` document of the same run)
or a job's joined step after fixes is missing from the page; or when the page is wider than the window at
1280 or 390 px.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

WIDTHS = (1280, 390)
TIMEOUT_S = 90


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=TIMEOUT_S, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, deadline):
        while time.time() < deadline:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.ws.settimeout(max(0.1, deadline - time.time()))
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError("no " + method)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError("evaluation failed: %s" % result["exceptionDetails"].get("text"))
        return result["result"].get("value")


CHECK_PAGE = r"""
(() => {
  const problems = [];
  const charts = Array.from(document.querySelectorAll('[data-chart]'));
  for (const box of charts) {
    const svg = box.querySelector('svg');
    const drawn = svg ? svg.querySelectorAll('path, rect, text').length : 0;
    const size = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    if (!svg || drawn < 3 || size.width < 50 || size.height < 50) {
      problems.push('chart ' + box.dataset.chart + ' did not draw (' + drawn + ' shapes, ' + Math.round(size.width) + 'x' + Math.round(size.height) + ')');
    }
    if (size.width > window.innerWidth + 1) problems.push('chart ' + box.dataset.chart + ' is wider than the window');
  }
  const width = document.documentElement.scrollWidth;
  if (width > window.innerWidth + 1) problems.push('page is ' + width + ' px wide in a ' + window.innerWidth + ' px window');
  return {problems, charts: charts.map(c => c.dataset.chart), text: document.body.innerText,
          fingerprints: Array.from(document.querySelectorAll('details.finding')).map(d => d.dataset.fingerprint),
          height: document.documentElement.scrollHeight};
})()
"""


def main():
    html_path, json_path = os.path.abspath(sys.argv[1]), sys.argv[2]
    screenshot = sys.argv[sys.argv.index("--screenshot") + 1] if "--screenshot" in sys.argv else None
    expected = json.load(open(json_path))
    expect_charts = sys.argv[sys.argv.index("--expect-charts") + 1].split(",") if "--expect-charts" in sys.argv else []
    chromium = find_chromium()
    if not chromium:
        print("browser_check: chromium is not installed", file=sys.stderr)
        return 77
    profile = tempfile.mkdtemp(prefix="ptadvise-chromium-")
    browser = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--remote-debugging-port=0", "--remote-allow-origins=*", "--user-data-dir=" + profile, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    problems = []
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + TIMEOUT_S
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.time() > deadline or browser.poll() is not None:
                print("browser_check: chromium did not start", file=sys.stderr)
                return 1
            time.sleep(0.2)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port, timeout=30))
        page = Page([t for t in targets if t["type"] == "page"][0]["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.call(domain + ".enable")
        url = "file://" + html_path
        for width in WIDTHS:
            page.events.clear()
            page.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
                      mobile=width < 500)
            page.call("Page.navigate", url=url)
            page.wait_for("Page.loadEventFired", time.time() + TIMEOUT_S)
            rendered = None
            deadline = time.time() + TIMEOUT_S
            while rendered is None and time.time() < deadline:
                rendered = page.evaluate("document.body && document.body.getAttribute('data-rendered')")
                if rendered is None:
                    time.sleep(0.2)
            if rendered is None:
                problems.append("%d px: the report script never finished" % width)
            state = page.evaluate(CHECK_PAGE)
            problems += ["%d px: %s" % (width, p) for p in state["problems"]]
            # Events seen while loading: console errors, exceptions, failed or outside requests.
            page.call("Runtime.evaluate", expression="0")  # drain
            for event in page.events:
                method, params = event.get("method"), event.get("params", {})
                if method == "Runtime.exceptionThrown":
                    problems.append("%d px: exception: %s" % (width, params["exceptionDetails"].get("text")))
                elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                    problems.append("%d px: console error: %s" % (width, args))
                elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                    problems.append("%d px: browser error: %s" % (width, params["entry"].get("text")))
                elif method == "Network.loadingFailed":
                    problems.append("%d px: request failed: %s" % (width, params.get("errorText")))
                elif method == "Network.requestWillBeSent":
                    request_url = params["request"]["url"]
                    if not (request_url.startswith("file://") or request_url.startswith("data:")):
                        problems.append("%d px: network request to %s" % (width, request_url))
            fingerprints = set(state["fingerprints"])
            for trace in expected["traces"]:
                for finding in trace["findings"]:
                    if finding["fingerprint"] not in fingerprints or finding["rule_id"] not in state["text"]:
                        problems.append("%d px: finding %s %s is not on the page" % (width, finding["rule_id"], finding["fingerprint"]))
                # A job's joined replay (docs/WHATIF.md, "Jobs") is shown with its predicted step (labels are
                # upper-cased by the style sheet, which innerText follows).
                joined = (trace.get("job") or {}).get("whatif") or {}
                if joined.get("available"):
                    value = "%.3f ms" % joined["predicted_step_ms_all_fixes"]
                    if "job step after every rank's fixes" not in state["text"].lower() or value not in state["text"]:
                        problems.append("%d px: the job's joined step after fixes (%s) is not on the page" % (width, value))
            if not state["charts"]:
                problems.append("%d px: no charts" % width)
            for name in expect_charts:
                if name not in state["charts"]:
                    problems.append("%d px: no %s chart" % (width, name))
            if screenshot and width == WIDTHS[0] and not problems:
                height = min(int(state["height"]), 2200)
                page.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
                page.evaluate("window.dispatchEvent(new Event('resize')); new Promise(r => setTimeout(r, 300))")
                shot = page.call("Page.captureScreenshot", format="png")
                import base64
                with open(screenshot, "wb") as out:
                    out.write(base64.b64decode(shot["data"]))
            print("%d px: %d charts drew, %d findings shown" % (width, len(state["charts"]), len(fingerprints)))
        page.ws.close()
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=20)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)
    for problem in problems:
        print("browser_check: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
