"""figures: the arithmetic of the measurements, pure: medians, ratios, CPU ticks a request, and
the reports of wrk and ab read into numbers. Nothing here starts a process or reads a file."""

import re


def median(values):
    """The middle of VALUES, the lower of the two middles when they are even (as the shell's
    `sort -g | v[int((NR + 1) / 2)]` did); None when there are none."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    return vals[(len(vals) + 1) // 2 - 1]


def ratio(a, b):
    """a / b to two decimals; 0 when b is not positive or either is missing."""
    if a is None or b is None or b <= 0:
        return 0.0
    return round(a / b, 2)


def thousands(v):
    """V rounded, with thousands separators: 1,000,000; "?" when missing."""
    if v is None:
        return "?"
    return f"{round(v):,}"


def fixed(v, places):
    """V with PLACES decimals, "?" when missing."""
    return "?" if v is None else f"{v:.{places}f}"


def to_ms(text):
    """A wrk latency (512.00us, 7.60ms, 1.02s, 1.50m) in milliseconds, to two decimals; None
    when it is not one."""
    m = re.fullmatch(r"\s*([0-9.]+)(us|ms|s|m)?\s*", text or "")
    if not m:
        return None
    n = float(m.group(1))
    n *= {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, None: 1.0}[m.group(2)]
    return round(n, 2)


def seconds_of(duration):
    """A wrk duration (10s, 2m, 1h, or bare seconds) in whole seconds, at least 1."""
    m = re.fullmatch(r"([0-9.]+)([smh]?)", duration.strip())
    if not m:
        raise ValueError(f"not a duration: {duration!r}")
    n = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return max(1, int(n + 0.5))


def per_unit(ticks, tick_us, units, places=1):
    """CPU microseconds a unit (request, order) of TICKS clock ticks of tick_us each spent on
    UNITS; 0 when there were none."""
    if not units:
        return 0.0
    return round(ticks * tick_us / units, places)


def cpu_delta(before, after):
    """Ticks spent by each process between two readings {name: ticks}."""
    return {name: after[name] - before.get(name, 0) for name in after}


def stat_ticks(stat_line):
    """utime + stime of a /proc/<pid>/stat line (fields 14 and 15), the command name skipped
    whole (it may hold spaces)."""
    fields = stat_line[stat_line.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def stat_child_ticks(stat_line):
    """cutime + cstime of a /proc/<pid>/stat line (fields 16 and 17): its reaped children's."""
    fields = stat_line[stat_line.rindex(")") + 2:].split()
    return int(fields[13]) + int(fields[14])


def parse_wrk(text):
    """wrk's --latency report: requests/s, p50 and p99 in ms, socket errors, requests."""
    out = {"rps": None, "p50": None, "p99": None, "errors": 0, "requests": 0}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("Requests/sec") and len(f) > 1:
            out["rps"] = float(f[1])
        elif len(f) >= 2 and f[0] == "50%":
            out["p50"] = to_ms(f[1])
        elif len(f) >= 2 and f[0] == "99%":
            out["p99"] = to_ms(f[1])
        elif "Socket errors" in line:
            out["errors"] = sum(int(n) for n in re.findall(r"\b(?:connect|read|write|timeout) (\d+)", line))
        elif "requests in" in line:
            out["requests"] = int(f[0])
    return out


def ab_field(report, prefix, column):
    """A number out of ab's report: the COLUMN-th word (1-based) of the first line that starts
    with PREFIX, as a float; 0 when there is none."""
    for line in report.splitlines():
        if line.startswith(prefix):
            words = line.split()
            try:
                return float(words[column - 1])
            except (IndexError, ValueError):
                return 0
    return 0


def parse_ab(report):
    """ab's report: seconds, complete, failed and non-2xx. ab counts as failed every response
    whose length differs from the first's (ours do: order ids, remaining counts); only Connect,
    Receive and Exceptions are real failures. Missing figures are None."""
    def first(pattern):
        m = re.search(pattern, report, re.M)
        return m

    out = {"seconds": None, "complete": None, "failed": None, "non2xx": 0}
    m = first(r"^Time taken for tests:\s+([0-9.]+)")
    if m:
        out["seconds"] = float(m.group(1))
    m = first(r"^Complete requests:\s+(\d+)")
    if m:
        out["complete"] = int(m.group(1))
    m = first(r"^Non-2xx responses:\s+(\d+)")
    if m:
        out["non2xx"] = int(m.group(1))
    m = first(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)")
    if m:
        out["failed"] = int(m.group(1)) + int(m.group(2)) + int(m.group(4))
    else:
        m = first(r"^Failed requests:\s+(\d+)")
        if m:
            out["failed"] = int(m.group(1))
    return out


def nominal_seconds(requests, last_rps):
    """A load run's nominal seconds for the progress line: REQUESTS at the strategy's last
    requests/s, 10 s when it has none; at least 1."""
    v = requests / last_rps if last_rps and last_rps > 0 else 10
    return max(1, int(v + 0.5))


def per_million(seconds, orders):
    """A drain step's nominal seconds: SECONDS a million orders, scaled to ORDERS; at least 1."""
    return max(1, int(seconds * orders / 1e6 + 0.5))


def overlaps(elections, period_ms):
    """Pairs of sweep elections (asked_ms, answered_ms) that share one period: neither's answer
    comes a period after the other's asking."""
    n = 0
    for i, (a1, b1) in enumerate(elections):
        for a2, b2 in elections[i + 1:]:
            if max(b2 - a1, b1 - a2) < period_ms:
                n += 1
    return n


def between_markers(doc, section, begin="<!-- bench:begin", end="<!-- bench:end"):
    """DOC with the lines from the one starting with BEGIN to the one starting with END replaced
    by SECTION; SECTION appended after a blank line when DOC has no BEGIN marker."""
    lines = doc.splitlines()
    if not any(line.startswith(begin) for line in lines):
        return doc.rstrip("\n") + "\n\n" + section + "\n"
    out, skip = [], False
    for line in lines:
        if line.startswith(begin):
            out.append(section)
            skip = True
        elif line.startswith(end):
            skip = False
        elif not skip:
            out.append(line)
    return "\n".join(out) + "\n"


def reserve_calls(commandstats):
    """The reserve script's calls (evalsha and eval) in an INFO commandstats reply."""
    total = 0
    for line in commandstats.splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            total += int(line.split(":", 1)[1].split(",")[0].split("=")[1])
    return total


def shares(deltas):
    """Each master's share of the calls, "33% / 34% / 33%"."""
    total = sum(deltas)
    return " / ".join(f"{(100 * d / total if total else 0):.0f}%" for d in deltas)
