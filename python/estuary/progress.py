"""A small progress bar for the command line (no dependency): on stderr, only when stderr is a
terminal (or ESTUARY_PROGRESS=1; ESTUARY_PROGRESS=0 turns it off), and only once the work has
run for `delay` seconds, so quick commands print nothing extra and piped output stays clean.

    with Progress(total=4, desc="bench redist") as bar:
        for run in runs:
            ...
            bar.update(1, note="ranks 4")

    with Progress(desc="demo") as bar:        # unknown length: elapsed time and a note
        for line in process.stdout:
            bar.update(0, note=line.strip())
"""
from __future__ import annotations

import os
import sys
import threading
import time


def enabled(stream=None) -> bool:
    flag = os.environ.get("ESTUARY_PROGRESS")
    if flag is not None:
        return flag not in ("0", "", "no", "false")
    stream = stream or sys.stderr
    return hasattr(stream, "isatty") and stream.isatty()


class Progress:
    def __init__(self, total: int | None = None, desc: str = "", delay: float | None = None, width: int = 28,
                 stream=None, interval: float = 0.5):
        self.total, self.desc, self.width = total, desc, width
        self.stream = stream or sys.stderr
        self.on = enabled(self.stream)
        if delay is None:
            delay = float(os.environ.get("ESTUARY_PROGRESS_DELAY", "2"))
        self.delay, self.interval = delay, interval
        self.done, self.note = 0, ""
        self.t0 = time.monotonic()
        self.shown = False
        self._last_len = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None

    # A ticker thread redraws the elapsed time while the caller waits on a child process.
    def __enter__(self):
        if self.on:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _tick(self):
        while not self._stop.wait(self.interval):
            self._draw()

    def update(self, n: int = 1, note: str | None = None):
        with self._lock:
            self.done += n
            if note is not None:
                self.note = note
        self._draw()

    def line(self) -> str:
        el = time.monotonic() - self.t0
        if self.total:
            frac = min(1.0, self.done / self.total)
            fill = int(round(frac * self.width))
            bar = "[" + "#" * fill + "." * (self.width - fill) + "]"
            eta = f" eta {el / frac - el:4.0f} s" if 0 < frac < 1 else ""
            text = f"{self.desc} {bar} {self.done}/{self.total} {el:5.0f} s{eta}"
        else:
            spin = "|/-\\"[int(el / self.interval) % 4]
            text = f"{self.desc} {spin} {el:5.0f} s"
        if self.note:
            text += "  " + self.note
        return text[:160]

    def _draw(self, force: bool = False):
        if not self.on:
            return
        with self._lock:
            if not force and time.monotonic() - self.t0 < self.delay:
                return
            text = self.line()
            pad = max(0, self._last_len - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self._last_len = len(text)
            self.shown = True

    def close(self):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1)
            self._ticker = None
        if self.shown:
            self._draw(force=True)
            with self._lock:
                self.stream.write("\n")
                self.stream.flush()
