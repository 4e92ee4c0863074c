"""scripts/draw-verify without a server: its ticket against a vector computed apart from it
(openssl's HMAC), the serving rule on hand-made lines, its verdicts on audits made here, and the
fetch of every page of a draw's audit. ctest unit_seckill_lab runs it; unit_draw_verify checks
it against audits that draw_order.c computes."""

import hashlib
import json
import os
import tempfile
import unittest

from test_room_verify import K, fetches_every_page, load_script, rfc2104, run as run_script

dv = load_script("draw-verify")

# printf 'seckill-entrant|7|3|42' | sha256sum
E_7_3_42 = "49a46f419dbb91be62b425e234df7e4825016eef19d276e57eac4fe1395dae06"
# printf "seckill-draw-v1|drand 1234|$E" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
TICKET = "d68bfb28f2806429c57015557c7d827c17977d61cb78b92350943d2651037aed"


def honest_audit(secret, beacon, stock, quantities, item=7, round_=3):
    """An audit as a correct server publishes it, ordered by the test's own HMAC as an integer and
    served by the rule written again here."""
    handles = [hashlib.sha256(f"seckill-entrant|{item}|{round_}|{u + 1}".encode()).hexdigest()
               for u in range(len(quantities))]
    quantity = dict(zip(handles, quantities))
    ranked = sorted(handles, key=lambda e: int.from_bytes(
        rfc2104(bytes.fromhex(secret), f"seckill-draw-v1|{beacon}|{e}".encode()), "big"))
    lines, left = [], stock
    for i, e in enumerate(ranked):
        outcome = "waitlisted" if left == 0 else "won" if quantity[e] <= left else "skipped"
        left -= quantity[e] if outcome == "won" else 0
        lines.append({"position": i + 1, "entrant": e, "quantity": quantity[e], "outcome": outcome})
    return {"item": item, "round": round_, "commitment": hashlib.sha256(bytes.fromhex(secret)).hexdigest(),
            "secret": secret, "beacon": beacon, "stock": stock, "entrants": lines}


def run(argv, get=None):
    return run_script(argv, get, dv)


class Rules(unittest.TestCase):
    def test_a_ticket_is_openssls_hmac_of_the_beacon_and_handle_under_the_raw_secret(self):
        self.assertEqual(dv.ticket_of(K, "drand 1234", E_7_3_42).hex(), TICKET)

    def test_the_serving_rule_skips_what_does_not_fit_and_waitlists_once_none_is_left(self):
        self.assertEqual(dv.serve([2, 4, 1, 3, 2, 1, 5], 5),
                         ["won", "skipped", "won", "skipped", "won", "waitlisted", "waitlisted"])
        self.assertEqual(dv.serve([3, 4], 2), ["skipped", "skipped"])
        self.assertEqual(dv.serve([1, 1], 0), ["waitlisted", "waitlisted"])


class Verdicts(unittest.TestCase):
    def setUp(self):
        self.audit = honest_audit(K, "round 99", 250, [1 + u % 3 for u in range(300)])

    def test_an_honest_audit_passes_and_it_has_every_outcome(self):
        self.assertEqual(dv.check(self.audit), [])
        self.assertEqual({x["outcome"] for x in self.audit["entrants"]}, {"won", "skipped", "waitlisted"})

    def test_an_entrant_served_later_from_the_waitlist_passes_a_winner_said_to_be_so_does_not(self):
        lines = self.audit["entrants"]
        waiting = next(x for x in lines if x["outcome"] in ("skipped", "waitlisted"))
        waiting["outcome"] = "won_from_waitlist"
        self.assertEqual(dv.check(self.audit), [])
        lines[0]["outcome"] = "won_from_waitlist"
        problems = dv.check(self.audit)
        self.assertEqual(len(problems), 1, problems)
        self.assertTrue(problems[0].startswith("position 1 ("), problems)

    def test_another_stock_or_beacon_fails(self):
        self.audit["stock"] = 249
        self.assertTrue(dv.check(self.audit))
        self.audit["stock"], self.audit["beacon"] = 250, "round 98"
        self.assertTrue(any("K and the beacon give" in p for p in dv.check(self.audit)))

    def test_a_published_ticket_is_checked(self):
        line = self.audit["entrants"][0]
        line["ticket"] = dv.ticket_of(K, "round 99", line["entrant"]).hex()
        self.assertEqual(dv.check(self.audit), [])
        line["ticket"] = "00" * 32
        self.assertEqual(len(dv.check(self.audit)), 1)

    def test_an_audit_without_the_stock_or_before_the_draw_cannot_be_checked(self):
        for field in ("stock", "beacon", "secret"):
            audit = dict(self.audit, **{field: None})
            with self.assertRaises(dv.Unverifiable, msg=field):
                dv.check(audit)


class Command(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.dir.name, "audit.json")
        self.audit = honest_audit(K, "", 1800, [1 + u % 2 for u in range(2500)], item=3, round_=1)

    def tearDown(self):
        self.dir.cleanup()

    def server(self, audit):
        """get(url) for main: a server that publishes audit in pages of 1,000, and the urls asked."""
        asked = []
        shared = {f: audit[f] for f in ("commitment", "secret", "beacon")}

        def get(url):
            asked.append(url)
            if url.endswith("/api/v1/items/3"):
                return {"id": 3, "round": audit["round"], "admission": "draw", "draw": dict(shared)}
            query = dict(kv.split("=") for kv in url.split("?")[1].split("&"))
            after = int(query.get("after", 0))
            page = audit["entrants"][after:after + int(query["limit"])]
            more = after + len(page) < len(audit["entrants"])
            return dict(shared, stock=audit["stock"], entrants=page,
                        next_after=page[-1]["position"] if more else None)
        return get, asked

    def test_it_fetches_every_page_and_saves_what_it_checked(self):
        e = hashlib.sha256(b"seckill-entrant|3|1|42").hexdigest()
        fetches_every_page(self, run, f"buyer 42: entrant {e}, position ")

    def test_a_page_with_another_stock_cannot_be_checked(self):
        get, _ = self.server(self.audit)

        def lying(url):
            page = get(url)
            return dict(page, stock=1) if "after=2000" in url else page
        self.assertEqual(run(["3"], lying)[0], 2)

    def test_a_saved_audit_with_two_lines_swapped_exits_1(self):
        e = self.audit["entrants"]
        e[0]["entrant"], e[1]["entrant"] = e[1]["entrant"], e[0]["entrant"]
        with open(self.file, "w") as f:
            json.dump(self.audit, f)
        code, _, err = run(["--audit", self.file])
        self.assertEqual(code, 1)
        self.assertIn("position 1: published", err)


if __name__ == "__main__":
    unittest.main()
