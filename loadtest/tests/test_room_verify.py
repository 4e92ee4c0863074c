"""scripts/room-verify without a server: its hashes against vectors computed apart from it
(coreutils' sha256sum and openssl's HMAC, and an HMAC built here from SHA-256 by RFC 2104), and
its verdicts on audits made here, honest and tampered. ctest unit_seckill_lab runs it."""

import hashlib
import io
import json
import os
import tempfile
import unittest
import unittest.mock
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader



def load_script(name):
    """scripts/<name> (a Python script without .py) as a module."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", name)
    loader = SourceFileLoader(name.replace("-", "_"), path)
    module = module_from_spec(spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


rv = load_script("room-verify")

K = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
# printf 'seckill-entrant|7|2|42' | sha256sum
E_7_2_42 = "52cfa9560ed7088a053794711b7833b56028efdc279d8f391d180cf0878060f6"
# printf "$K" | xxd -r -p | sha256sum
COMMITMENT_K = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
# printf "seckill-room-v1|$E" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
HMAC_K_E = "91e664133537d966a279ac4a22975098fadc1dd5877d5744c0875278b325713c"


def rfc2104(key, msg):
    """HMAC-SHA256 from SHA-256 alone (RFC 2104), so the test does not lean on the hmac module."""
    key = key.ljust(64, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in key) + msg).digest()
    return hashlib.sha256(bytes(b ^ 0x5C for b in key) + inner).digest()


def honest_audit(secret, users, item=7, round_=2):
    """An audit as a correct server publishes it, ordered by the test's own HMAC as an integer."""
    handles = [hashlib.sha256(f"seckill-entrant|{item}|{round_}|{u}".encode()).hexdigest() for u in users]
    ranked = sorted(handles, key=lambda e: int.from_bytes(
        rfc2104(bytes.fromhex(secret), b"seckill-room-v1|" + e.encode()), "big"))
    return {"item": item, "round": round_, "commitment": hashlib.sha256(bytes.fromhex(secret)).hexdigest(),
            "secret": secret, "entrants": [{"entrant": e, "place": i + 1} for i, e in enumerate(ranked)]}


def run(argv, get=None, script=None):
    """(exit code, stdout, stderr) of script's main (room-verify's by default) on argv."""
    out, err = io.StringIO(), io.StringIO()
    code = (script or rv).main(argv, out=out, err=err, **({"get": get} if get else {}))
    return code, out.getvalue(), err.getvalue()


class Hashes(unittest.TestCase):
    def test_an_entrant_handle_is_the_sha256_of_item_round_and_buyer_in_decimal(self):
        self.assertEqual(rv.entrant_of(7, 2, 42), E_7_2_42)

    def test_the_commitment_is_the_sha256_of_the_secrets_raw_bytes_not_of_its_hex(self):
        self.assertEqual(rv.commitment_of(K), COMMITMENT_K)

    def test_the_draw_key_is_openssls_hmac_of_the_prefixed_handle_under_the_raw_secret(self):
        self.assertEqual(rv.draw_key(K, E_7_2_42).hex(), HMAC_K_E)
        self.assertEqual(rfc2104(bytes.fromhex(K), b"seckill-room-v1|" + E_7_2_42.encode()).hex(), HMAC_K_E)

    def test_equal_draw_keys_fall_back_to_the_handle(self):
        with unittest.mock.patch.object(rv, "draw_key", lambda s, e: b"\0" * 32):
            self.assertEqual(rv.order_of(K, ["b" * 64, "a" * 64]), ["a" * 64, "b" * 64])


class Verdicts(unittest.TestCase):
    def setUp(self):
        self.audit = honest_audit(K, range(1, 201))

    def test_an_honest_audit_passes(self):
        self.assertEqual(rv.check(self.audit), [])

    def test_two_lines_swapped_by_hand_fail_naming_both_places(self):
        e = self.audit["entrants"]
        e[3]["entrant"], e[9]["entrant"] = e[9]["entrant"], e[3]["entrant"]
        problems = rv.check(self.audit)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(problems[0].startswith("place 4:") and problems[1].startswith("place 10:"))

    def test_a_secret_that_is_not_the_committed_one_fails_even_if_the_order_follows_it(self):
        other = "ff" * 32
        forged = honest_audit(other, range(1, 201))
        forged["commitment"] = self.audit["commitment"]
        problems = rv.check(forged)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("not the commitment", problems[0])

    def test_a_gap_or_a_repeated_place_fails(self):
        self.audit["entrants"][5]["place"] = 7
        self.assertTrue(any("not 1..200" in p for p in rv.check(self.audit)))

    def test_a_buyer_listed_twice_fails(self):
        self.audit["entrants"].append({"entrant": self.audit["entrants"][0]["entrant"], "place": 201})
        self.assertTrue(any("more than once" in p for p in rv.check(self.audit)))

    def test_a_missing_joiner_is_not_noticed_by_the_order_but_by_the_buyer_who_looks_for_their_line(self):
        del self.audit["entrants"][-1]
        self.assertEqual(rv.check(self.audit), [])
        missing = [u for u in range(1, 201) if rv.line_of(self.audit, u)[1] is None]
        self.assertEqual(len(missing), 1)

    def test_an_audit_before_the_start_cannot_be_checked(self):
        self.audit["secret"] = None
        with self.assertRaises(rv.Unverifiable):
            rv.check(self.audit)

    def test_a_buyer_finds_their_line(self):
        e, place = rv.line_of(self.audit, 42)
        self.assertEqual(e, rv.entrant_of(7, 2, 42))
        self.assertEqual(self.audit["entrants"][place - 1]["entrant"], e)


def fetches_every_page(test, run, said):
    """Asserts that run (a verifier's) fetches test.audit of item 3 (2,500 lines) in its three
    pages from test.server, saves it whole to test.file, and says said about buyer 42."""
    get, asked = test.server(test.audit)
    code, out, err = run(["--save", test.file, "3", "--user", "42"], get)
    test.assertEqual(code, 0, err)
    test.assertEqual([u.split("?")[1] for u in asked[1:]],
                     ["limit=1000", "limit=1000&after=1000", "limit=1000&after=2000"])
    with open(test.file) as f:
        test.assertEqual(json.load(f), test.audit)
    test.assertIn(said, out)


class Command(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.dir.name, "audit.json")
        self.audit = honest_audit(K, range(1, 2501), item=3, round_=1)

    def tearDown(self):
        self.dir.cleanup()

    def save(self, audit):
        with open(self.file, "w") as f:
            json.dump(audit, f)

    def server(self, audit, room=True):
        """get(url) for main: a server that publishes audit in pages of 1,000, and the urls asked."""
        asked = []

        def get(url):
            asked.append(url)
            if url.endswith("/api/v1/items/3"):
                detail = {"id": 3, "round": audit["round"], "admission": "room" if room else "race"}
                if room:
                    detail["room"] = {"commitment": audit["commitment"], "secret": audit["secret"]}
                return detail
            query = dict(kv.split("=") for kv in url.split("?")[1].split("&"))
            after = int(query.get("after", 0))
            page = audit["entrants"][after:after + int(query["limit"])]
            more = after + len(page) < len(audit["entrants"])
            return {"commitment": audit["commitment"], "secret": audit["secret"], "entrants": page,
                    "next_after": page[-1]["place"] if more else None}
        return get, asked

    def test_a_saved_honest_audit_exits_0_and_a_tampered_one_exits_1(self):
        self.save(self.audit)
        self.assertEqual(run(["--audit", self.file])[0], 0)
        e = self.audit["entrants"]
        e[0], e[1] = e[1], e[0]
        e[0]["place"], e[1]["place"] = 1, 2
        self.save(self.audit)
        code, _, err = run(["--audit", self.file])
        self.assertEqual(code, 1)
        self.assertIn("place 1:", err)

    def test_it_fetches_every_page_and_saves_what_it_checked(self):
        fetches_every_page(self, run, f"buyer 42: entrant {rv.entrant_of(3, 1, 42)}, place ")

    def test_an_item_without_a_room_or_an_unreadable_file_exits_2(self):
        get, _ = self.server(self.audit, room=False)
        self.assertEqual(run(["3"], get)[0], 2)
        self.assertEqual(run(["--audit", os.path.join(self.dir.name, "absent.json")])[0], 2)
        with open(self.file, "w") as f:
            f.write("{not json")
        self.assertEqual(run(["--audit", self.file])[0], 2)

    def test_neither_or_both_of_an_item_and_a_file_is_a_usage_error(self):
        self.assertEqual(run([])[0], 2)
        self.assertEqual(run(["3", "--audit", self.file])[0], 2)


if __name__ == "__main__":
    unittest.main()
