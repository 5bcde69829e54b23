"""The realapp's verification, as TechEmpower's verifier runs before it
measures: a server whose answers break the rules of a test type fails that
type, and is not measured on it.

    python3 bench/realapp/verify.py --port PORT [--types json,plaintext]
                                    [--db-port PORT]

What is checked, per answer: status 200; the headers Server (non-empty),
Date (an HTTP date, within two minutes of this clock), Content-Type (the
type's: application/json, text/plain, text/html with charset=utf-8 for
fortunes; another charset than UTF-8 is refused), Content-Length equal to
the body's length or Transfer-Encoding; no Content-Encoding.  Then the body:

- json: exactly the object {"message": "Hello, World!"} (white space free);
- db: one object with exactly the keys id and randomNumber, integers in
  1..10000 (not strings, not an array);
- queries: an array of such objects, as many as the queries parameter
  clamped to 1..500 (missing, empty, 0, negative, not an integer: 1;
  above 500: 500);
- updates: as queries, and the database holds afterwards the numbers the
  answer shows (read back with psql), and the rows really changed: over all
  the update requests, at most two of the ids may keep their old number (a
  new random number equals the old one once in 10,000);
- fortunes: the HTML parsed (tags, text with its entities resolved) equals
  the table of the 12 Fortune rows plus "Additional fortune added at
  request time." with id 0, sorted by message, the <script> message as
  text (escaped), the Japanese one intact (the body must be UTF-8);
- plaintext: exactly Hello, World!.

From Python: verify(port, types, db) returns a Report; report.ok,
report.problems[type] (a list of strings, empty when the type passed).
"""

import argparse
import email.utils
import html.parser
import http.client
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pg  # noqa: E402

TYPES = ("json", "db", "queries", "fortunes", "updates", "plaintext")
PATHS = {"json": "/json", "db": "/db", "queries": "/queries",
         "fortunes": "/fortunes", "updates": "/updates",
         "plaintext": "/plaintext"}
# the queries parameters sent, with the count each must give
QUERY_CASES = [("2", 2), ("0", 1), ("-3", 1), ("foo", 1), ("", 1),
               (None, 1), ("501", 500), ("20", 20)]
UPDATE_CASES = [("2", 2), ("0", 1), ("foo", 1), (None, 1), ("501", 500),
                ("20", 20)]
CONTENT_TYPES = {"json": "application/json", "db": "application/json",
                 "queries": "application/json",
                 "updates": "application/json", "plaintext": "text/plain",
                 "fortunes": "text/html"}
DATE_SKEW = 120               # seconds
COINCIDENCES = 2              # update ids allowed to keep their number


class Report:
    def __init__(self):
        self.problems = {}    # type -> [str]
        self.checked = {}     # type -> number of requests

    @property
    def ok(self):
        return all(not p for p in self.problems.values())

    def add(self, type_, problem):
        self.problems.setdefault(type_, []).append(problem)

    def text(self):
        lines = []
        for t, problems in self.problems.items():
            state = "FAIL" if problems else "ok"
            lines.append("%-9s %s (%d requests)" % (t, state,
                                                    self.checked.get(t, 0)))
            lines += ["    " + p for p in problems]
        return "\n".join(lines)


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        """The values of header `name` (any case)."""
        return [v for k, v in self.headers if k.lower() == name.lower()]


def fetch(host, port, path, timeout=60):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept": "*/*"})
        r = conn.getresponse()
        return Answer(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


# --- headers ------------------------------------------------------------------

def header_problems(type_, a):
    """What is wrong with answer `a`'s status and headers."""
    out = []
    if a.status != 200:
        return ["status %d, not 200" % a.status]
    server = a.header("Server")
    if not server or not server[0].strip():
        out.append("no Server header")
    date = a.header("Date")
    if not date:
        out.append("no Date header")
    else:
        try:
            when = email.utils.parsedate_to_datetime(date[0]).timestamp()
            if not date[0].rstrip().endswith("GMT"):
                out.append("Date %r is not an HTTP date in GMT" % date[0])
            elif abs(when - time.time()) > DATE_SKEW:
                out.append("Date %r is off by %d s" % (date[0],
                                                       when - time.time()))
        except (TypeError, ValueError):
            out.append("Date %r is not an HTTP date" % date[0])
    ctype = a.header("Content-Type")
    if len(ctype) != 1:
        out.append("%d Content-Type headers" % len(ctype))
    else:
        parts = [p.strip().lower() for p in ctype[0].split(";")]
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        charset = params.get("charset", "").strip('"')
        if parts[0] != CONTENT_TYPES[type_]:
            out.append("Content-Type %r, not %s" % (ctype[0],
                                                    CONTENT_TYPES[type_]))
        elif charset not in ("", "utf-8"):
            out.append("Content-Type %r: the body is UTF-8" % ctype[0])
        elif type_ == "fortunes" and charset != "utf-8":
            out.append("Content-Type %r has no charset=utf-8" % ctype[0])
    length = a.header("Content-Length")
    chunked = a.header("Transfer-Encoding")
    if not length and not chunked:
        out.append("neither Content-Length nor Transfer-Encoding")
    if length and length[0].strip() != str(len(a.body)):
        out.append("Content-Length %s, but the body has %d bytes"
                   % (length[0], len(a.body)))
    if a.header("Content-Encoding"):
        out.append("Content-Encoding %s: compression is not permitted"
                   % a.header("Content-Encoding")[0])
    return out


# --- bodies -------------------------------------------------------------------

def parse_json(body):
    try:
        return json.loads(body.decode("utf-8")), None
    except (UnicodeDecodeError, ValueError) as e:
        return None, "not JSON (%s): %r" % (e, body[:80])


def world_problem(w):
    """What is wrong with one World object, or None."""
    if not isinstance(w, dict):
        return "%r is not an object" % (w,)
    if sorted(w) != ["id", "randomNumber"]:
        return "keys %s, not exactly id and randomNumber" % sorted(w)
    for k in ("id", "randomNumber"):
        v = w[k]
        if not isinstance(v, int) or isinstance(v, bool):
            return "%s %r is not an integer" % (k, v)
        if not 1 <= v <= pg.WORLD_ROWS:
            return "%s %d is outside 1..%d" % (k, v, pg.WORLD_ROWS)
    return None


def worlds_problems(body, count):
    value, err = parse_json(body)
    if err:
        return [err], []
    if not isinstance(value, list):
        return ["%r is not an array" % (body[:80],)], []
    out = []
    if len(value) != count:
        out.append("%d objects, not %d" % (len(value), count))
    bad = [p for p in map(world_problem, value) if p]
    if bad:
        out.append("%d bad objects, the first: %s" % (len(bad), bad[0]))
    return out, [] if bad else value


class _Tokens(html.parser.HTMLParser):
    """An HTML document as a list of tokens: ("<", tag), ("/", tag),
    ("!", doctype), ("t", text with the entities resolved), white space
    between tags dropped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tokens = []

    def handle_decl(self, decl):
        self.tokens.append(("!", decl.lower().split()[-1] if decl else ""))

    def handle_starttag(self, tag, attrs):
        self.tokens.append(("<", tag))

    def handle_endtag(self, tag):
        self.tokens.append(("/", tag))

    def handle_startendtag(self, tag, attrs):
        self.tokens.append(("<", tag))

    def handle_data(self, data):
        if data.strip():
            self.tokens.append(("t", data.strip()))


def html_tokens(text):
    p = _Tokens()
    p.feed(text)
    p.close()
    return p.tokens


def expected_fortunes():
    rows = sorted(pg.FORTUNES + [pg.ADDED_FORTUNE], key=lambda r: r[1])
    doc = ["<!DOCTYPE html><html><head><title>Fortunes</title></head><body>"
           "<table><tr><th>id</th><th>message</th></tr>"]
    doc += ["<tr><td>%d</td><td>%s</td></tr>"
            % (i, m.replace("&", "&amp;").replace("<", "&lt;")
               .replace(">", "&gt;")) for i, m in rows]
    doc.append("</table></body></html>")
    return html_tokens("".join(doc))


def fortunes_problems(body):
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return ["the body is not UTF-8 (%s)" % e]
    got, want = html_tokens(text), expected_fortunes()
    if got == want:
        return []
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return ["the HTML differs at token %d: %r, expected %r"
                    % (i, g, w)]
    return ["the HTML has %d tokens, expected %d (%r)"
            % (len(got), len(want),
               (got[len(want):] or want[len(got):])[:3])]


# --- the types ----------------------------------------------------------------

def check(report, type_, a, body_problems):
    report.checked[type_] = report.checked.get(type_, 0) + 1
    problems = header_problems(type_, a)
    if a.status == 200:
        problems += body_problems(a)
    for p in problems:
        report.add(type_, p)
    return not problems


def query_path(type_, q):
    return PATHS[type_] + ("" if q is None else "?queries=%s" % q)


def verify_updates(report, host, port, db, timeout):
    """The update cases, each checked against the database before and
    after."""
    unchanged = total = 0
    for q, count in UPDATE_CASES:
        before = db.worlds() if db is not None else None
        a = fetch(host, port, query_path("updates", q), timeout)
        found = {}

        def body(a):
            problems, worlds = worlds_problems(a.body, count)
            found["worlds"] = worlds
            return ["queries=%s: %s" % (q, p) for p in problems]
        if not check(report, "updates", a, body) or db is None:
            continue
        after = db.worlds()
        shown = {}
        for w in found["worlds"]:
            shown.setdefault(w["id"], set()).add(w["randomNumber"])
        wrong = [i for i, ns in shown.items() if after[i] not in ns]
        if wrong:
            report.add("updates", "queries=%s: %d of %d rows hold another "
                       "number than the answer shows (id %d: %d in the "
                       "database, %s in the answer)"
                       % (q, len(wrong), len(shown), wrong[0],
                          after[wrong[0]], sorted(shown[wrong[0]])))
        total += len(shown)
        unchanged += sum(1 for i in shown if after[i] == before[i])
    if db is None:
        report.add("updates", "not verified against the database: "
                   "no database given")
    elif unchanged > COINCIDENCES:
        report.add("updates", "%d of %d updated rows kept their number: "
                   "the updates were not written" % (unchanged, total))


def verify(port, types=TYPES, db=None, host="127.0.0.1", timeout=60):
    """Checks every type of `types` on the server at host:port; `db` (a
    pg.Client or pg.Postgres) for the updates' check."""
    report = Report()
    for t in types:
        report.problems.setdefault(t, [])
        try:
            _verify_type(report, t, host, port, db, timeout)
        except (OSError, http.client.HTTPException) as e:
            report.add(t, "request failed: %s" % (e,))
    return report


def _verify_type(report, t, host, port, db, timeout):
    if t == "json":
        def body(a):
            value, err = parse_json(a.body)
            if err:
                return [err]
            if value != {"message": "Hello, World!"} \
                    or not isinstance(value, dict):
                return ["%r is not {\"message\": \"Hello, World!\"}"
                        % (a.body[:80],)]
            return []
        check(report, t, fetch(host, port, PATHS[t], timeout), body)
    elif t == "plaintext":
        check(report, t, fetch(host, port, PATHS[t], timeout),
              lambda a: [] if a.body == b"Hello, World!"
              else ["%r is not Hello, World!" % (a.body[:80],)])
    elif t == "db":
        def body(a):
            value, err = parse_json(a.body)
            if err:
                return [err]
            p = world_problem(value)
            return [p] if p else []
        for _ in range(3):
            check(report, t, fetch(host, port, PATHS[t], timeout), body)
    elif t == "queries":
        for q, count in QUERY_CASES:
            check(report, t, fetch(host, port, query_path(t, q), timeout),
                  lambda a, q=q, count=count:
                  ["queries=%s: %s" % (q, p)
                   for p in worlds_problems(a.body, count)[0]])
    elif t == "fortunes":
        check(report, t, fetch(host, port, PATHS[t], timeout),
              lambda a: fortunes_problems(a.body))
    elif t == "updates":
        verify_updates(report, host, port, db, timeout)
    else:
        raise ValueError("unknown test type %r" % t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--db-port", type=int,
                    help="the private PostgreSQL's port (pg.py), for the "
                         "updates' check")
    args = ap.parse_args(argv)
    db = None
    if args.db_port:
        db = pg.Client(args.db_port)
    report = verify(args.port, [t for t in args.types.split(",") if t],
                    db, args.host)
    print(report.text())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
