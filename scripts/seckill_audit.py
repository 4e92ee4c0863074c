"""seckill_audit: what scripts/room-verify and scripts/draw-verify share: the entrant handle and the
commitment, the shape checks of a published secret, the fetch of an audit's pages, and the command
line (fetch or read a saved audit, check it, exit 0, 1 or 2). Python 3's standard library only."""
import argparse
import hashlib
import json
import os
import re
import urllib.error
import urllib.request

ENTRANT_PREFIX = "seckill-entrant|"
PAGE_LIMIT = 1000
HEX64 = re.compile(r"^[0-9a-f]{64}$")
# A report lists this many differences, then counts the rest.
SHOWN = 10


class Unverifiable(Exception):
    """The audit could not be checked at all (exit 2), as opposed to checked and wrong (exit 1)."""


def entrant_of(item, round_, user_id):
    """A buyer's entrant handle E: hex SHA-256("seckill-entrant|<item>|<round>|<user_id>")."""
    text = f"{ENTRANT_PREFIX}{int(item)}|{int(round_)}|{int(user_id)}"
    return hashlib.sha256(text.encode()).hexdigest()


def commitment_of(secret_hex):
    """The commitment of a secret K given in hex: hex SHA-256 of K's raw bytes."""
    return hashlib.sha256(bytes.fromhex(secret_hex)).hexdigest()


def secret_problems(audit, unpublished):
    """[] when the audit's secret is the committed one, else the sentence that says it is not.
    Raises Unverifiable when either is not 64 hex digits, or the secret is not published yet
    (unpublished says why not)."""
    secret, commitment = audit.get("secret"), audit.get("commitment")
    if not isinstance(commitment, str) or not HEX64.match(commitment):
        raise Unverifiable(f"the commitment is not 64 hex digits: {commitment!r}")
    if secret is None:
        raise Unverifiable(f"no secret published yet: {unpublished}")
    if not isinstance(secret, str) or not HEX64.match(secret):
        raise Unverifiable(f"the secret is not 64 hex digits: {secret!r}")
    if commitment_of(secret) != commitment:
        return [f"SHA-256(secret) is {commitment_of(secret)}, not the commitment {commitment}"]
    return []


def handle_problems(handles):
    """The sentences that say a list of entrant handles is malformed or repeats one."""
    problems = []
    bad = [e for e in handles if not isinstance(e, str) or not HEX64.match(e)]
    if bad:
        problems.append(f"{len(bad)} entrant handle(s) are not 64 hex digits, e.g. {bad[0]!r}")
    if len(set(handles)) != len(handles):
        problems.append("an entrant is listed more than once")
    return problems


def shown(sentences, what):
    """The first SHOWN sentences, then one that counts the rest ("... and 3 more <what>")."""
    more = [f"... and {len(sentences) - SHOWN} more {what}"] if len(sentences) > SHOWN else []
    return sentences[:SHOWN] + more


def get_json(url):
    """GET url, parsed JSON; Unverifiable on an HTTP error or an unreadable answer."""
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return json.load(res)
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace").strip()
        raise Unverifiable(f"GET {url}: {e.code} {body}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise Unverifiable(f"GET {url}: {e}") from None


def fetch(base, item, get, member, audit_path, shared, paged=()):
    """The whole audit of item from the server at base: the detail's round and its member (the
    "room" or the "draw" object) whose fields shared start the audit, then the pages of
    audit_path (?after=&limit=) until next_after is null, each repeating the shared fields and
    the paged ones (the first page's) unchanged. get(url) answers parsed JSON."""
    base = base.rstrip("/")
    detail = get(f"{base}/api/v1/items/{item}")
    section = detail.get(member)
    if not isinstance(section, dict):
        raise Unverifiable(f"item {item} has no {member} (admission {detail.get('admission')!r})")
    audit = {"item": int(item), "round": detail.get("round")}
    audit.update((field, section.get(field)) for field in shared)
    audit["entrants"] = []
    after = None
    while True:
        query = f"limit={PAGE_LIMIT}" + ("" if after is None else f"&after={after}")
        page = get(f"{base}/api/v1/items/{item}/{audit_path}?{query}")
        for field in (*shared, *paged):
            if after is None and field in paged:
                audit[field] = page.get(field)
            elif page.get(field) != audit[field]:
                raise Unverifiable(f"the audit's {field} {page.get(field)!r} is not the "
                                   f"{'first page' if field in paged else 'detail'}'s {audit[field]!r}")
        audit["entrants"].extend(page.get("entrants") or [])
        nxt = page.get("next_after")
        if nxt is None:
            return audit
        if after is not None and nxt <= after:
            raise Unverifiable(f"the audit's next_after went back from {after} to {nxt}")
        after = nxt


def command(prog, doc, argv, check, fetch_audit, where, ok, failed, out, err, get):
    """A verifier's command line (doc is its usage): ITEM fetched by fetch_audit(url, item, get)
    (and saved by --save FILE) or --audit FILE read, then check(audit): its problems, printed
    with failed, exit 1; none, ok(audit) printed, exit 0; Unverifiable or an unreadable file,
    exit 2. --user USER_ID or --entrant E also prints where(audit, E), that entrant's line."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    p.add_argument("item", nargs="?", type=int, help="the item's id (to fetch from the server)")
    p.add_argument("--url", default=os.environ.get("SECKILL_URL", "http://127.0.0.1:8080"))
    p.add_argument("--audit", metavar="FILE", help="check this saved audit instead of fetching")
    p.add_argument("--save", metavar="FILE", help="write the fetched audit to FILE")
    p.add_argument("--user", metavar="USER_ID", type=int, help="print this buyer's line")
    p.add_argument("--entrant", metavar="E", help="print the line of this entrant handle")
    args = p.parse_args(argv)
    if (args.audit is None) == (args.item is None):
        p.print_usage(err)
        print(f"{prog}: give either ITEM or --audit FILE", file=err)
        return 2
    try:
        if args.audit is not None:
            with open(args.audit, encoding="utf-8") as f:
                audit = json.load(f)
        else:
            audit = fetch_audit(args.url, args.item, get)
            if args.save:
                with open(args.save, "w", encoding="utf-8") as f:
                    json.dump(audit, f, indent=1)
                    f.write("\n")
        problems = check(audit)
        if args.user is not None:
            if audit.get("item") is None or audit.get("round") is None:
                raise Unverifiable("the audit names no item and round: --user cannot find a line")
            e = entrant_of(audit["item"], audit["round"], args.user)
            print(f"buyer {args.user}: entrant {e}, {where(audit, e)}", file=out)
        if args.entrant is not None:
            print(f"entrant {args.entrant}: {where(audit, args.entrant)}", file=out)
    except (Unverifiable, OSError, ValueError) as e:
        print(f"{prog}: cannot check: {e}", file=err)
        return 2
    if problems:
        for line in problems:
            print(f"{prog}: {line}", file=err)
        print(f"{prog}: FAILED: {failed}", file=err)
        return 1
    print(f"{prog}: ok: {ok(audit)}", file=out)
    return 0

