"""system: the processes of a run and the clients that talk to them: the run folder's Redis and
PostgreSQL (scripts/services.sh), our servers and workers, free ports, HTTP through urllib,
redis-cli and psql, and the CPU ticks of processes from /proc."""

import json
import os
import random
import resource
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from . import figures

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TICK_US = 1000000 // os.sysconf("SC_CLK_TCK")


class Failure(Exception):
    """A run that cannot go on: the message says why."""


def sh(*args, check=True, capture=True, env=None, **kw):
    """Runs ARGS from the repository; returns its stdout (text)."""
    r = subprocess.run(args, cwd=ROOT, check=False, text=True, env=env,
                       stdout=subprocess.PIPE if capture else None, **kw)
    if check and r.returncode != 0:
        raise Failure(f"{' '.join(args)} failed ({r.returncode})")
    return r.stdout if capture else ""


def services(function, *args, check=True):
    """A function of scripts/services.sh (zk_start, nginx_start, ...) run by bash; its stdout."""
    return sh("bash", "-c", 'source scripts/services.sh && "$@"', "services.sh", function, *args,
              check=check).strip()


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def free_port(low=10000, high=32000, taken=()):
    """A random port in [LOW, HIGH) that nothing listens on and not in TAKEN: below the kernel's
    ephemeral range, where a client connection's local end could take it at any moment."""
    for _ in range(100):
        p = random.randrange(low, high)
        if p not in taken and port_free(p):
            return p
    raise Failure(f"no free TCP port found in {low}-{high - 1}")


def read_env(path):
    """The variables of a run folder's env file (export K=V ...; quotes removed)."""
    out = {}
    for line in open(path):
        if not line.startswith("export "):
            continue
        for word in shlex.split(line[len("export "):]):
            k, _, v = word.partition("=")
            out[k] = v
    return out


# ---- HTTP ---------------------------------------------------------------------------------

def http(method, url, body=None, token=None, timeout=30):
    """(status, body text); status 0 when nothing answered."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


def get_json(url, timeout=30):
    status, body = http("GET", url, timeout=timeout)
    if status != 200:
        raise Failure(f"GET {url}: {status}")
    return json.loads(body)


def post_json(url, doc, token, timeout=30):
    status, body = http("POST", url, json.dumps(doc), token, timeout)
    if status // 100 != 2:
        raise Failure(f"POST {url}: {status} {body}")
    return json.loads(body) if body else None


def wait_ready(url, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if http("GET", url, timeout=2)[0] // 100 == 2:
            return True
        time.sleep(0.1)
    return False


# ---- Redis and PostgreSQL -------------------------------------------------------------------

class Backends:
    """The run folder's Redis and PostgreSQL, from its env file."""

    def __init__(self, env):
        self.env = env
        self.redis_port = env["SECKILL_REDIS_PORT"]
        self.conninfo = env["SECKILL_PG_CONNINFO"]

    def redis(self, *args):
        return sh("redis-cli", "-h", "127.0.0.1", "-p", self.redis_port, *map(str, args)).strip()

    def redis_int(self, *args):
        return int(self.redis(*args) or 0)

    def sql(self, query):
        """One value (or rows, space-separated) of QUERY."""
        return sh("psql", self.conninfo, "-XqtA", "-F", " ", "-v", "ON_ERROR_STOP=1", "-c", query).strip()

    def psql(self, *commands):
        args = []
        for c in commands:
            args += ["-c", c]
        sh("psql", self.conninfo, "-X", "-q", "-v", "ON_ERROR_STOP=1", *args)


# ---- processes ------------------------------------------------------------------------------

def ticks(pid):
    """CPU time of a process so far in clock ticks (all its threads); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return figures.stat_ticks(f.read())
    except (OSError, ValueError):
        return 0


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().split("\0")
    except OSError:
        return []


def postmaster(run_dir):
    with open(os.path.join(run_dir, "pg", "postmaster.pid")) as f:
        return int(f.readline())


def pg_procs(run_dir):
    """{name or pid: ticks} of the run's PostgreSQL: the postmaster and each of its children by
    pid, and "reaped" (the postmaster's cutime + cstime: children gone, a COPY's backend)."""
    pm = postmaster(run_dir)
    with open(f"/proc/{pm}/stat") as f:
        out = {"reaped": (figures.stat_child_ticks(f.read()), "reaped")}
    for p in [pm] + children(pm):
        words = cmdline(p)
        out[p] = (ticks(p), words[0].split()[1] if words and len(words[0].split()) > 1 else
                  (words[1] if len(words) > 1 else "?"))
    return out


def pg_ticks(run_dir):
    """The whole PostgreSQL of the run folder: living and gone."""
    return sum(t for t, _ in pg_procs(run_dir).values())


def live_pid(pid, pattern):
    return pattern in " ".join(cmdline(pid))


class Proc:
    """A server or worker (or any binary) we started: its pid, its log, stopped by us."""

    def __init__(self, name, argv, env, log):
        self.name = name
        self.log = log
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        self.pid = self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def send(self, sig):
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self, sig=signal.SIGTERM, grace=15):
        """SIGNAL, then SIGKILL if still there after GRACE seconds; reaped here."""
        self.send(sig)
        try:
            return self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.send(signal.SIGKILL)
            return self.popen.wait()

    stop = kill


def wrk(threads, conns, duration, url, items=None, seed=None, out=None):
    """wrk --latency at URL; with ITEMS (an item id, or several separated by commas) every request
    is a purchase of a new buyer (loadtest/purchase.lua, buyers named from SEED). Returns its
    report (also written to OUT) and the CPU seconds it spent."""
    argv = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}", "--latency"]
    if items is not None:
        argv += ["-s", "loadtest/purchase.lua", url, "--", str(items), str(seed)]
    else:
        argv.append(url)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out:
        with open(out, "w") as f:
            f.write(r.stdout)
    return r.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def now_ms():
    return int(time.time() * 1000)


def base_env(**more):
    env = dict(os.environ)
    env.update({k: str(v) for k, v in more.items()})
    return env
