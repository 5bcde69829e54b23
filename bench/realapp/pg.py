"""A private PostgreSQL for the realapp: Debian's server binaries
(/usr/lib/postgresql/VERSION/bin, package postgresql), a cluster in a
temporary directory, listening on a free port of 127.0.0.1 only (its Unix
socket in the same directory), loaded with TechEmpower's schema: World,
10,000 rows of (id, randomNumber 1..10000), and Fortune, its 12 rows.

    python3 bench/realapp/pg.py start [DIR]   start, load, print the port
                                              (DIR made if missing; as
                                              root, its parents must let
                                              postgres through)
    python3 bench/realapp/pg.py stop DIR      stop and remove DIR

From Python: `with Postgres() as pg: pg.jdbc_url(), pg.query(sql)`.

initdb and the server refuse to run as root: as root, they run as the
`postgres` user the package creates (else `nobody`), which owns the
directory.  The database is hello_world, its user benchmarkdbuser (trust
authentication on loopback: no password), as TechEmpower names them.
"""

import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOST = "127.0.0.1"
DATABASE = "hello_world"
USER = "benchmarkdbuser"
WORLD_ROWS = 10000

# TechEmpower's Fortune table (the ids and messages every implementation
# loads); the 13th fortune is added by the handler at request time.
FORTUNES = [
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't "
        "broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want "
        "it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom "
        "Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, "<script>alert(\"This should not be displayed in a browser alert "
         "box.\");</script>"),
    (12, "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1"
         "\u30de\u30fc\u30af"),
]
ADDED_FORTUNE = (0, "Additional fortune added at request time.")


def sql_literal(s):
    return "'%s'" % s.replace("'", "''")


def schema_sql():
    """The tables and their rows: World's random numbers drawn by the
    server (1..10000), Fortune's fixed rows."""
    fortunes = ",\n".join("(%d, %s)" % (i, sql_literal(m))
                          for i, m in FORTUNES)
    return """
CREATE TABLE World (
  id integer NOT NULL,
  randomNumber integer NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
);
INSERT INTO World (id, randomNumber)
  SELECT x, 1 + floor(random() * 10000)::integer
  FROM generate_series(1, %d) AS x;
CREATE TABLE Fortune (
  id integer NOT NULL,
  message varchar(2048) NOT NULL,
  PRIMARY KEY (id)
);
INSERT INTO Fortune (id, message) VALUES
%s;
VACUUM ANALYZE;
""" % (WORLD_ROWS, fortunes)


def pg_bin():
    """The directory of Debian's PostgreSQL server binaries (the newest
    version installed), or None."""
    found = []
    for d in Path("/usr/lib/postgresql").glob("*/bin"):
        if (d / "initdb").exists() and (d / "pg_ctl").exists():
            m = re.match(r"(\d+)", d.parent.name)
            found.append((int(m.group(1)) if m else 0, d))
    return max(found)[1] if found else None


def missing_reason():
    """Why no PostgreSQL can be started here, or None."""
    if pg_bin() is None:
        return ("PostgreSQL's server binaries are missing "
                "(/usr/lib/postgresql/*/bin/initdb): run "
                "scripts/install-deps.sh (Debian's postgresql)")
    if shutil.which("psql") is None:
        return "psql is missing (Debian's postgresql-client)"
    return None


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def run_as():
    """(uid, gid) the server runs as: ours, or, as root, postgres's (else
    nobody's)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            p = pwd.getpwnam(name)
            return p.pw_uid, p.pw_gid
        except KeyError:
            pass
    raise RuntimeError("running as root, and no postgres or nobody user "
                       "to run PostgreSQL as")


class Client:
    """Queries the hello_world database of a cluster on 127.0.0.1:port,
    through psql."""

    def __init__(self, port):
        self.port = port

    def jdbc_url(self):
        return ("jdbc:postgresql://%s:%d/%s?user=%s"
                % (HOST, self.port, DATABASE, USER))

    def query(self, sql):
        """Rows of `sql` (lists of strings)."""
        r = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-h", HOST,
                            "-p", str(self.port), "-U", USER, "-d", DATABASE,
                            "-v", "ON_ERROR_STOP=1", "-c", sql],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("psql: %s" % r.stderr.strip())
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def worlds(self):
        """{id: randomNumber} of the whole World table."""
        return {int(i): int(n)
                for i, n in self.query("SELECT id, randomNumber FROM World")}


class Postgres(Client):
    """One private cluster.  `directory` None: a new temporary one,
    removed by stop()."""

    def __init__(self, directory=None, port=None, shared_buffers="128MB",
                 max_connections=200):
        self.bin = pg_bin()
        if self.bin is None:
            raise RuntimeError(missing_reason())
        self.owned = directory is None
        self.dir = Path(directory or tempfile.mkdtemp(prefix="realapp-pg-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.data = self.dir / "data"
        Client.__init__(self, port or free_port())
        self.shared_buffers = shared_buffers
        self.max_connections = max_connections
        self.ids = run_as()

    # -- running the binaries as the cluster's owner --

    def _demote(self):
        if self.ids:
            os.setgid(self.ids[1])
            os.setuid(self.ids[0])

    def _run(self, args, check=True, timeout=300, input=None):
        r = subprocess.run(args, preexec_fn=self._demote, input=input,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout, cwd=str(self.dir))
        if check and r.returncode != 0:
            raise RuntimeError("%s failed (%d):\n%s"
                               % (" ".join(map(str, args)), r.returncode,
                                  r.stdout))
        return r

    # -- life --

    def start(self):
        os.chmod(self.dir, 0o755)
        if self.ids:
            os.chown(self.dir, *self.ids)
        if not (self.data / "PG_VERSION").exists():
            self._run([self.bin / "initdb", "-D", self.data, "-U", USER,
                       "--auth=trust", "-E", "UTF8", "--locale=C", "-N"])
        opts = ("-c listen_addresses=%s -p %d -k %s -c max_connections=%d "
                "-c shared_buffers=%s -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c logging_collector=off"
                % (HOST, self.port, self.dir, self.max_connections,
                   self.shared_buffers))
        self._run([self.bin / "pg_ctl", "-D", self.data, "-l",
                   self.dir / "server.log", "-o", opts, "-w", "-t", "120",
                   "start"])
        if not self._has_database():
            self._run(["psql", "-X", "-q", "-h", HOST, "-p", str(self.port),
                       "-U", USER, "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                       "-c", "CREATE DATABASE %s" % DATABASE])
            self._run(["psql", "-X", "-q", "-h", HOST, "-p", str(self.port),
                       "-U", USER, "-d", DATABASE, "-v", "ON_ERROR_STOP=1"],
                      input=schema_sql())
        return self

    def _has_database(self):
        r = self._run(["psql", "-X", "-At", "-h", HOST, "-p", str(self.port),
                       "-U", USER, "-d", "postgres", "-c",
                       "SELECT 1 FROM pg_database WHERE datname = '%s'"
                       % DATABASE])
        return r.stdout.strip() == "1"

    def postmaster_pid(self):
        """The server's first process (its backends are its children)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self):
        """Stops the server (fast shutdown) and removes a directory it
        made (or was told to remove)."""
        if (self.data / "postmaster.pid").exists():
            self._run([self.bin / "pg_ctl", "-D", self.data, "-m", "fast",
                       "-w", "-t", "60", "stop"], check=False)
        if self.owned:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

def main(argv):
    if len(argv) >= 2 and argv[1] == "start":
        directory = argv[2] if len(argv) > 2 else tempfile.mkdtemp(
            prefix="realapp-pg-")
        pg = Postgres(directory).start()
        print("postgres: %s listening on %s:%d (%s)"
              % (pg.dir, HOST, pg.port, pg.jdbc_url()))
        return 0
    if len(argv) == 3 and argv[1] == "stop":
        pg = Postgres(argv[2])
        pg.owned = True
        pg.stop()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
