"""progress: where a long run is (step k of n, elapsed, about how long is left), on stderr.

On a terminal one line "NAME: [k/n] LABEL — elapsed 3m12s, about 9m left" is redrawn in place at
each step and notes appear above it; otherwise each step is a plain line, for logs. Steps carry
nominal seconds (a wrk round's duration, or what the step took in an earlier run): what is left is
the nominal seconds not finished, scaled by how long the finished steps took against theirs.
Elapsed counts from the program's start: the build and the set-up before the first step too.
"""

import os
import shutil
import sys
import time

STARTED = time.monotonic()


def duration(s):
    """42s, 3m12s, 1h05m."""
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def left(s):
    """As precise as an estimate deserves: whole minutes from two minutes up, tens of seconds
    below."""
    s = int(s)
    if s >= 120:
        return f"about {(s + 30) // 60}m left"
    if s >= 10:
        return f"about {duration((s + 5) // 10 * 10)} left"
    return "a few seconds left"


def estimate(elapsed_s, done_w, left_w):
    """What is left after ELAPSED_S seconds spent on DONE_W nominal seconds, with LEFT_W to go."""
    if done_w > 0 and elapsed_s > 0:
        return left(elapsed_s * left_w / done_w)
    return left(left_w)


class Progress:
    def __init__(self, name, weights, stream=sys.stderr):
        self.name, self.weights, self.k = name, list(weights), 0
        self.stream = stream
        self.t0 = time.monotonic()
        self.tty = stream.isatty()
        self.cols = shutil.get_terminal_size((80, 24)).columns if self.tty else 80
        if self.cols < 20:
            self.cols = 80
        self.drawn = False
        self.line = ("", "", "")

    def step(self, label):
        done_w = sum(self.weights[:self.k])
        left_w = sum(self.weights[self.k:])
        self.k += 1
        rest = estimate(time.monotonic() - self.t0, done_w, left_w)
        head = f"{self.name}: [{self.k}/{len(self.weights)}] "
        tail = f" — elapsed {duration(time.monotonic() - STARTED)}, {rest}"
        self.line = (head, label, tail)
        self._draw()

    def _draw(self):
        head, label, tail = self.line
        if not self.tty:
            print(f"{head}{label}{tail}", file=self.stream, flush=True)
            return
        room = self.cols - 1 - len(head) - len(tail)
        if len(label) > room:
            label = label[:max(room - 3, 0)] + "..."
        line = f"{head}{label}{tail}"[:self.cols - 1]
        self.stream.write(f"\r\033[K{line}")
        self.stream.flush()
        self.drawn = True

    def note(self, text):
        if self.drawn:
            self.stream.write("\r\033[K")
        print(text, file=self.stream, flush=True)
        if self.drawn:
            self._draw()

    def brk(self):
        """Before output progress does not know of: ends the line being redrawn."""
        if self.drawn:
            self.stream.write("\n")
        self.drawn = False

    def end(self):
        if self.drawn:
            self.stream.write("\r\033[K")
        self.drawn = False
        print(f"{self.name}: done in {duration(time.monotonic() - STARTED)} ({len(self.weights)} steps)",
              file=self.stream, flush=True)


class Quiet(Progress):
    """Notes only, before the steps are counted."""

    def __init__(self, stream=sys.stderr):
        super().__init__("", [], stream)
        self.tty = False


def env_int(name, default):
    return int(os.environ.get(name, default))
