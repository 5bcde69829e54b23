"""Every performance figure the docs quote, held to the result file it
comes from (text only: no nginx, no benchmark).

FIGURES is the table. Each row has the doc's own words with its figures
in braces ("allocates about {361} bytes"), the bench/results file the doc
names for them, and that file's own words with the numbers the figures
come from in braces. The test

- finds the words in the doc: a figure changed in the doc fails;
- checks that the doc names the results file in the same paragraph, list
  item or table row (with scope "section": under the same heading, for a
  list drawn from a table above it);
- finds the source's words in the results file: a number changed there
  fails;
- checks each doc figure against its source: the same number to the
  doc's precision, rounded half up (361 for 361.3), or one computed from
  the source's numbers (derive: "$1 / $0", $i the i-th number in braces
  of the source's words), to the doc's precision or within an explicit
  "~tolerance" where the doc rounds further ("about 2 GB");
- requires every other number of the quoted words (code spans, file
  names, dates and versions aside) to be listed in given: the conditions
  of a measurement (2 workers, 40,000 req/s), not its results.

TESTED holds figures that a test measures as it runs: no results file
keeps them; the doc names the test, which must exist, and a bound the doc
quotes must be the test's own.

test_every_measurement_is_in_the_table reads docs/*.md and README.md for
what looks like a measurement (µs, req/s, "0.95 of", p99, CPU seconds,
bytes a request, B/KB/MB/GB, seconds to a tenth): each must lie inside a
quote of FIGURES or TESTED, or be listed in NOT_MEASURED with its reason.
A figure added to a doc without its row here fails.
"""

import re
from collections import namedtuple
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

Fig = namedtuple("Fig", "doc quote source evidence derive given scope")


def F(doc, quote, source, evidence, derive=None, given=(), scope="paragraph"):
    return Fig(doc, quote, source, tuple(evidence), derive, tuple(given), scope)


OPS, DIR, HAN, INT, SCA, SHA, README = (
    "docs/operations.md", "docs/directives.md", "docs/handlers.md",
    "docs/internals.md", "docs/scale-out.md", "docs/shared.md", "README.md")

FIGURES = [
    # ---- docs/operations.md
    F(OPS, "{1.31} times its CPU a request with tracing on and unsampled,\n{2.95} times",
      "2026-11-29-tracing.md",
      ["| unsampled | 28827 | 13.5 | {1.31} |", "| sampled | 23479 | 30.6 | {2.95} |"]),
    F(OPS, "the median rate with a profile running was x{0.983} to x{1.033} of the",
      "2026-11-29-profile.md",
      ["| hello | 25 | x1.033 | x0.931 | x{0.983} |", "| hello | 25 | x{1.033} |"]),
    F(OPS, "a worker's start took {2.6} to {3.3} s of CPU without it and {2.1} "
           "to {2.4} s with it, about {21}% less",
      "2026-11-29-dev-start.md",
      ["a worker's start took {2.59} to {3.26} s of CPU without the cache and "
       "{2.14} to {2.39} s with the archive mapped, about {21}% less"]),
    F(OPS, "allocates about {361} bytes per request in loop mode (the request's "
           "copy, its map, the response and the `:uri` it read) and {361} in "
           "coloop too (its virtual thread and its task kept for the next "
           "request), {516} in pool mode and {846} in virtual mode",
      "2026-11-28-coloop-task.md",
      ["| ring-loop | 17 | 360.9 | {360.9} |",
       "| ring-coloop | 17 | 457.1 | **{361.3}** |",
       "ring-pool {516.2}, ring-virtual {845.9} after"]),
    F(OPS, "a handler using only clojure.core {39}–{42} MB on JDK 17 and "
           "{44}–{45} MB on JDK 25; the Compojure example {69} MB and "
           "{72}–{76} MB",
      "2026-11-27-memory.md",
      ["| **this branch** | 17 | tiny | **{38.9}, {41.9}**",
       "| **this branch** | 25 | tiny | **{43.5}, {45.4}** |",
       "| **this branch** | 17 | Compojure | **{68.9}, {69.4}**",
       "| **this branch** | 25 | Compojure | **{75.9}, {72.4}** |"],
      derive=["$0", "$1", "$2", "$3", ("$4", "$5"), "$7", "$6"]),
    F(OPS, "({5.3} MB of the default `-Xms16m`; {10.6} MB with the earlier 32 MB)",
      "2026-11-27-memory.md", ["young generation {10.6} → {5.3} MB"],
      derive=["$1", "$0"], given=["32"], scope="section"),
    F(OPS, "({3.6} MB for the tiny handler, {19} MB for Compojure)",
      "2026-11-27-memory.md",
      ["old generation {3.6} of 21.4 MB", "tenured {19} MB used"],
      scope="section"),
    F(OPS, "`worker_connections` × {432} bytes, all written at the worker's "
           "start, whether used or not: the launcher's default is at most "
           "10,240 ({4.4} MB); `--connections 20000` for a worker that must "
           "hold 20,000 ({8.6} MB)",
      "2026-11-27-memory.md",
      ["{432} bytes each", "(18,976 → 10,240: 8.2 → {4.4} MB)"],
      derive=["$0", "$1", "20000 * $0 / 10**6"],
      given=["10,240", "20,000"], scope="section"),
    F(OPS, "their read-write part, {4} MB each, is the worker's own",
      "2026-11-27-memory.md", ["{3.9}–{4.3} MB private each"],
      derive=[("$0", "$1")], scope="section"),
    F(OPS, "the code cache ({8}–{10} MB committed), metaspace ({1.5}–{2.7} MB), "
           "symbols, {18} threads' stacks (about {1.2} MB), glibc's heaps "
           "({2}–{7} MB",
      "2026-11-27-memory.md",
      ["| Code (code cache) | {7.6} | 7.6 | {9.9} | 9.8 |",
       "| Metaspace | 1.2 | {1.5} | {2.7} | 2.5 |",
       "| Thread (16 → {18} threads; stacks) | 0.9 | {1.2} |",
       "glibc's main heap {2}–{7} MB"],
      scope="section"),
    F(OPS, "libjvm.so ({15}–{18} MB resident",
      "2026-11-27-memory.md",
      ["machine: {15} MB resident, 46 processes mapping it; Temurin 25's {18} MB"],
      scope="section"),
    F(OPS, "(8 workers: tiny {34} MB, Compojure {71} MB on 2026-11-23's measurement",
      "2026-11-23-start-memory-reload.md",
      ["| 17, cache | tiny | 8 | **{34.0} MB** |",
       "| 17, cache | Compojure | 8 | **{70.6} MB** |"],
      given=["8"]),
    F(OPS, "this took the loop's `/hello` from {0.82} of plain nginx's own "
           "`return 200` over the same TLS listener to {1.04}, at {7.7} µs of "
           "the server's CPU a request against {11.5} before",
      "2026-11-28-h2-cork.md",
      ["loop 95.0k (**{0.82}**;",
       "1.21x plain nginx on 1.22.1 and {1.04}x on 1.30.6",
       "at 8.6 and {7.7} µs of server CPU a request (before: 13.6 and {11.5})"]),
    F(OPS, "With 8 messages in flight on each of 100 connections: {156.0}k "
           "messages/s against http-kit's {127.6}k, at {5.9} µs of the "
           "server's CPU a message against {8.5}",
      "2026-11-28-0850-websocket.md",
      ["| 100 | jvm-ring | 97407 | 9.9 | 7.99 | {156038} | {5.9} | 18.95 |",
       "| 100 | http-kit | 84770 | 11.2 | 7.24 | {127600} | {8.5} | 45.07 |"],
      derive=["$0 / 10**3", "$2 / 10**3", "$1", "$3"], given=["8", "100"]),

    # ---- docs/directives.md
    F(DIR, "16 MB rather than the earlier 32 MB kept a tiny handler's worker "
           "{5}–{6} MB smaller (PSS {44.8}–{46.9} → {39.3}–{40.3} MB, JDK 17, "
           "2 workers)",
      "2026-11-27-memory.md",
      ["| tiny {5}–{6} MB (young generation",
       "| connections capped only | 17 | tiny | {44.8}, {46.9} |",
       "({39.3}, {40.3} with `-Xms16m` as an option)"],
      given=["16", "32", "2"]),
    F(DIR, "pages ({25}–{30} MB per worker after a warm-up)",
      "2026-11-23-start-memory-reload.md",
      ["glibc kept {25}–{30} MB of them per worker after a warm-up"]),
    F(DIR, "(about {60} ns of the {250} that coloop cost above loop per request",
      "2026-11-26-coloop.md",
      ["`replaceNode`, about {60} ns per request: gone",
       "coloop spends about {250} ns"]),
    F(DIR, "every page is copied into each worker: {14} MB of the class "
           "cache's archive and {10} MB of the JDK's",
      "2026-11-23-start-memory-reload.md",
      ["copied into each worker ({14} MB of app.jsa and {10} MB of the JDK's own archive"]),
    F(DIR, "a worker started on {0.13} CPU seconds less",
      "2026-11-26-reload.md", ["about {0.13} CPU seconds less per worker"]),
    F(DIR, "the Compojure example in {4.43} s without the cache and {1.31} s "
           "with it, a handler using only clojure.core in {1.37} s and {0.39} s",
      "2026-11-23-start-memory-reload.md",
      ["| Compojure example (`hello.core/app`) | 5.8 s | {4.43} s | **{1.31} s**",
       "| tiny (clojure.core only, `bench.core/handler`) | 1.4 s | {1.37} s | **{0.39} s**"]),
    F(DIR, "faster still ({1.80} to {1.50} s on the Compojure example",
      "2026-11-23-start-memory-reload.md",
      ["`-Dclojure.compiler.direct-linking=true`: Compojure {1.80} → {1.50} s"]),
    F(DIR, "two workers on two cores ran `/hello` at {0.76}-{0.85} of loop "
           "mode, on these at {0.85}-{1.05}",
      "2026-11-26-handoff.md",
      ["Virtual mode's lag ({0.76}-{0.85} of loop on /hello",
       "| /hello: virtual / loop | 0.93 | 1.04 | {0.85} |",
       "| a `Pool` of 16 carriers | 119.2k / 113.7k = **{1.05}** |"]),
    F(DIR, "gets a reset (measured: {35} to {48} failed requests per reload at "
           "a fixed rate of 40,000 req/s)",
      "2026-11-26-reload.md", ["against {35}-{48} per reload"],
      given=["40,000"]),
    F(DIR, "they are half of a JVM's start ({0.6} of {1.1} CPU seconds) and "
           "most of what a cold worker spends beyond a warm one (another "
           "{1.0} s, C2 {0.9} and C1 {0.1}, in its first 6 s under load)",
      "2026-11-26-reload.md",
      ["A new worker's start costs {1.1}-1.2 CPU",
       "main thread 0.46 s, C2 {0.41} s, C1 {0.20} s",
       "add C2 {0.9} s and C1 {0.1} s more"],
      derive=["$1 + $2", "$0", "$3 + $4", "$3", "$4"], given=["6"]),
    F(DIR, "At 40,000 req/s on the Compojure example, against the whole start "
           "at +10, that took five reloads in a row from p99 {45} to {16} ms and "
           "max {91} to {60} ms, and one reload's p99 from {25} to {19} ms",
      "2026-11-26-reload.md",
      ["five reloads p99 {16} ms against {45} ms",
       "max {60} ms against {91} ms",
       "one reload p99 {19} ms idle against {25} ms at +10"],
      derive=["$1", "$0", "$3", "$2", "$5", "$4"], given=["40,000", "10"]),
    F(DIR, "at saturation the new workers served {5} s later",
      "2026-11-26-reload.md", ["At saturation that costs the {5} s"]),
    F(DIR, "from the old workers for {50} to {170} ms as the new worker became "
           "ready (every request of a reload at 40,000 req/s stalled",
      "2026-11-27-warmup.md", ["every request stalled for {50}-{170} ms"],
      given=["40,000"]),
    F(DIR, "one reload at 40,000 req/s went from a p99 of {38} ms to {94} ms",
      "2026-11-27-warmup.md",
      ["| no warm-up | 1.60 | {38.0} / 66.3 |",
       "| `jvm_warmup / requests=20000;` | 1.39 | {93.7} / 113.2 |"],
      given=["40,000"]),

    # ---- docs/handlers.md
    F(HAN, "its virtual thread and its bookkeeping cost about {0.25} µs of CPU "
           "(a `/hello` runs at {0.96} of loop mode's rate, against "
           "{0.75}-{0.76} for `virtual` and {0.71}-{0.74} for `pool` in the "
           "same worker",
      "2026-11-26-coloop.md",
      ["coloop spends about {250} ns",
       "(median **{0.959}**)", "(median **{0.962}**)",
       "| Java | loop | {166,204} |", "| Java | virtual | {126,735} |",
       "| Java | pool | {122,508} |", "| Ring | loop | {162,623} |",
       "| Ring | virtual | {121,569} |", "| Ring | pool | {115,013} |"],
      derive=["$0 / 10**3", ("$1", "$2"), "$7 / $6", "$4 / $3",
              "$8 / $6", "$5 / $3"]),
    F(HAN, "held the loop ({1.3} s instead of {0.3} in tests/test_coloop.py's case",
      "2026-11-26-coloop.md",
      ["complete after {1.3} s beside", "`-Djdk.pollerMode=1` in {0.3} s"]),
    F(HAN, "500 such requests at once finish in {0.30} s (five round trips) as "
           "in `virtual` and `pool`, while a static file of the same worker "
           "keeps a p99 of {4.1}-{4.8} ms (virtual and pool {3.3}-{4.8})",
      "2026-11-26-coloop.md",
      ["requests over 100 connections finish in {0.295}-{0.300} s",
       "| coloop | 0.300 | 0.319 | 0.12 | **{4.11}** |",
       "| coloop | 0.295 | 0.311 | 0.13 | **{4.82}** |",
       "| virtual | 0.296 | 0.308 | 0.13 | {3.28} |",
       "| not pinned | **4.21** | {4.77} |"],
      derive=[("$0", "$1"), "$2", "$3", "$4", "$5"], given=["500"]),
    F(HAN, "keeps {0.89} of the file's requests per second; on a pool thread "
           "(a hand-off each way) {0.71}. A `jvm_async` content handler making "
           "one subrequest to a `proxy_pass` location keeps {0.95} of `proxy_pass` alone",
      "phases-2026-11-23-1120.md",
      ["| access+static / static | {0.89} |",
       "| access(pool)+static / static | {0.71} |",
       "| subrequest / proxy | {0.95} |"]),

    # ---- docs/internals.md
    F(INT, "a call from a loop handler, its body relayed, answered {13,235}\n"
           "requests a second at {74.1} µs of the worker's CPU each; the JDK's\n"
           "`HttpClient` from the loop (`sendAsync`) {11,716} at {122.7} µs, and\n"
           "from a pool thread (`send`) {10,682} at {141.0} µs; a subrequest\n"
           "{35,173} at {27.7} µs; `proxy_pass` alone {50,582} at {19.0} µs. A call\n"
           "costs {0.60} of the JDK client's CPU",
      "2026-11-29-client.md",
      ["| call | {13235} | {74.1} | 0.26 |", "| jdk-async | {11716} | {122.7} | 0.23 |",
       "| jdk-pool | {10682} | {141.0} | 0.21 |", "| subrequest | {35173} | {27.7} | 0.70 |",
       "| proxy | {50582} | {19.0} | 1.00 |",
       "| call / jdk-async (CPU per request) | {0.60} |"]),
    F(INT, "A 1 GB body\nrelayed to curl went at {411} MB/s ({750} through `proxy_pass`), the\n"
           "worker's RSS peaking at {223.3} MB in both",
      "2026-11-29-client.md",
      ["| Upstream call relayed | {411} | 212.2 | 223.3 |",
       "| proxy_pass | {750} | 212.2 | {223.3} |"], given=["1"]),
    F(INT, "took both cores from the old workers for {50}-{170} ms",
      "2026-11-27-warmup.md", ["every request stalled for {50}-{170} ms"]),
    F(INT, "the loop reads the eventfd {0.035} times, wakes a pool thread {0.026} times",
      "2026-11-26-handoff.md",
      ["the loop reads the eventfd {0.035} times, makes {0.026} futex wakes"]),
    F(INT, "it ran /hello at {0.76}-{0.85} of loop mode, and its carriers made "
           "{0.41} voluntary context switches a request",
      "2026-11-26-handoff.md",
      ["Virtual mode's lag ({0.76}-{0.85} of loop on /hello",
       "made 0.51 (loops) and {0.41}"]),
    F(INT, "(with a carrier per core, {0.62}-{0.68})",
      "2026-11-26-handoff.md", ["`virtual` ran at {0.62}-{0.68} of loop"]),
    F(INT, "ran it at {1.05} of loop, as pool mode, with 16 carriers; with one, "
           "{0.95} on /hello and {0.78} on /file",
      "2026-11-26-handoff.md",
      ["| a `Pool` of 16 carriers | 119.2k / 113.7k = **{1.05}** |",
       "| a `Pool` of 1 carrier | 107.5k / 113.1k = {0.95} | 60.5k / 77.3k = {0.78} |"],
      given=["16"]),
    F(INT, "no object loop mode does not ({96} B each",
      "2026-11-28-coloop-task.md", ["`nginx.jvm.Task` ({96} B,"]),
    F(INT, "virtual thread ({296} B of the JDK's each",
      "2026-11-27-alloc.md", ["a fresh virtual thread per request costs {296} B in the JDK"]),

    # ---- docs/scale-out.md: the cluster test, capacity on paper
    F(SCA, "(root; about {2} minutes on the",
      "2026-11-25-cluster.md", ["takes about {2} minutes all told"],
      scope="section"),
    F(SCA, "were on another host {3} s after the cut",
      "2026-11-25-cluster.md",
      ["reconnection of 3–5 ms) | {2.9} s | 2.9 s |"],
      derive=["$0 ~0.1"], scope="section"),
    F(SCA, "the bridge carries a message from app1 to app3 again {1} to {3} s later",
      "2026-11-25-cluster.md",
      ["| 1.21 s | {0.80} s | 1.22 s |", "0.00 s / {3.11} s"],
      scope="section"),
    F(SCA, "{87.7}k req/s on the loop ({11.2} µs of worker CPU a request), "
           "{70.5}k in pool ({17.6} µs), {54.3}k virtual ({21.5} µs); a `File` "
           "body {43.9}k",
      "2026-11-23-throughput.md",
      ["| /hello | loop | {87.7}k | 0.870 | {11.2} |",
       "| /hello | pool | {70.5}k | 0.691 | {17.6} |",
       "| /hello | virtual | {54.3}k | 0.545 | {21.5} |",
       "| /file | loop (a `File` body) | {43.9}k |"]),
    F(SCA, "application host {41}–{51} µs, front {32}–{50} µs, Redis {0.5}–{1} µs",
      "2026-11-25-cluster.md",
      ["| application host (nginx worker + JVM) | 44 µs | {41} µs | 45 µs |",
       "live page 43 and {51} µs on the application host, 42 and {50} µs at the front",
       "| | front (plain nginx, proxying) | {32} µs |",
       "| | Redis | {1} µs | {0.5} µs |"],
      derive=["$0", "$1", "$3", "$2", "$5", "$4"]),
    F(SCA, "application host {262}–{650} µs (the lower after a longer warm-up), "
           "front {53}–{64} µs, Redis {30}–{43} µs",
      "2026-11-25-cluster.md",
      ["notes page {262} and 317 µs", "| application host | {650} µs |",
       "{53} and 60 µs at the front", "| | front | {64} µs |",
       "{30} and 36 µs in Redis", "| | Redis (one `GETEX`) | {43} µs |"]),
    F(SCA, "{95}k GET/s, {93}k SET/s with 50 connections",
      "2026-11-25-cluster.md", ["**{95,465} GET/s and {93,153} SET/s**"],
      derive=["$0 / 10**3", "$1 / 10**3"], given=["50"]),
    F(SCA, "PSS {39}–{42} MB (a tiny handler), {69} MB (Compojure); RSS "
           "{64}–{67} and {96}–{114} MB; JDK 25: {44}–{45} and {72}–{76} MB",
      "2026-11-27-memory.md",
      ["| **this branch** | 17 | tiny | **{38.9}, {41.9}** (39.3, 40.3 with "
       "`-Xms16m` as an option) | 31.2–34.3 | 7.6–9.0 | {64}–{67} |",
       "| **this branch** | 17 | Compojure | **{68.9}, {69.4}** (87.5, 71.4) "
       "| 59.4–77.6 | 9.5–10.9 | {96}–{114} |",
       "| **this branch** | 25 | tiny | **{43.5}, {45.4}** |",
       "| **this branch** | 25 | Compojure | **{75.9}, {72.4}** |"],
      derive=["$0", "$1", ("$4", "$5"), "$2", "$3", "$6", "$7", "$8", "$9",
              "$11", "$10"]),
    F(SCA, "RSS {129}–{145} MB", "2026-11-25-cluster.md",
      ["the bridge's threads) | {129}–{145} MB |"]),
    F(SCA, "{0.97}–{1.82} KB of the worker's RSS; {120}–{248} B of it live Java heap",
      "2026-11-23-websocket.md",
      ["| jvm-java | 2 | 10000 | 125.6 | 135.1 | {0.97} |",
       "| jvm-pool | 1 | 10000 | 181.7 | 199.4 | {1.82} |",
       "| jvm-java | 1 | 10000 | 119.5 | 133.7 | 1.45 | 0.00 KB | PASS (<= 2 KB) | {120} B |",
       "| jvm-pool | 1 | 10000 | 181.7 | 199.4 | 1.82 | 0.07 KB | PASS (<= 2 KB) | {248} B |"]),
    F(SCA, "{1,051} B of user memory a connection; {8,592} B of kernel memory",
      "2026-11-28-conns.md",
      ["| user memory per connection | **{1,051} B**",
       "| kernel memory per connection, both ends | {8,592} B"]),
    F(SCA, "about {18.5} KB (nginx's part of the {28}–{35} KB of nginx + Jetty)",
      "2026-11-23-websocket.md",
      ["nginx's own part about {18.5} KB",
       "| nginx-jetty | 2 | 10000 | 184.2 | 460.6 | {28.30} |",
       "| nginx-jetty | 1 | 10000 | 144.7 | 485.1 | {34.86} |"]),
    # "What follows from them": figures drawn from the table above
    F(SCA, "`c` is nginx-jvm's own CPU per request ({11} µs on the loop, {18} "
           "µs in a pool) and `a` the application's. For a trivial handler "
           "nginx-jvm's cost dominates: {55}–{90}k req/s a core",
      "2026-11-23-throughput.md",
      ["| /hello | loop | 87.7k | 0.870 | {11.2} |",
       "| /hello | pool | 70.5k | 0.691 | {17.6} |"],
      derive=["$0", "$1", "10**3 / $1 ~2", "10**3 / $0 ~1"], scope="section"),
    F(SCA, "the application's hundreds of µs dominate: {260}–{650} µs in all, "
           "so some {1,500} to {4,000} pages a second a core",
      "2026-11-25-cluster.md",
      ["notes page {262} and 317 µs", "| application host | {650} µs |"],
      derive=["$0 ~2", "$1", "10**6 / $1 ~50", "10**6 / $0 ~200"],
      scope="section"),
    F(SCA, "(one a core: about {130}–{145} MB each for an application like these)",
      "2026-11-25-cluster.md", ["the bridge's threads) | {129}–{145} MB |"],
      derive=["$0 ~1", "$1"], scope="section"),
    F(SCA, "An idle WebSocket costs nginx-jvm {1}–{2} KB of user memory, so "
           "100,000 idle sockets take {100}–{180} MB on the host",
      "2026-11-23-websocket.md",
      ["| jvm-java | 2 | 10000 | 125.6 | 135.1 | {0.97} |",
       "| jvm-pool | 1 | 10000 | 181.7 | 199.4 | {1.82} |"],
      derive=["$0", "$1", "10**5 * $0 / 10**3 ~3", "10**5 * $1 / 10**3 ~2"],
      given=["100,000"], scope="section"),
    F(SCA, "besides the kernel's socket memory ({8.6} KB a connection, both ends counted)",
      "2026-11-28-conns.md",
      ["| kernel memory per connection, both ends | {8,592} B"],
      derive=["$0 / 10**3"], scope="section"),
    F(SCA, "At the front each proxied WebSocket costs about {18.5} KB (two "
           "connections and their buffers), so 100,000 of them need about {2} GB",
      "2026-11-23-websocket.md", ["nginx's own part about {18.5} KB"],
      derive=["$0", "10**5 * $0 / 10**6"], given=["100,000"], scope="section"),
    F(SCA, "**The front** costs {30}–{65} µs of CPU a proxied request here (on a "
           "busy machine: an upper bound), so one front core passes {15}–{30}k "
           "requests a second",
      "2026-11-25-cluster.md",
      ["| | front (plain nginx, proxying) | {32} µs |", "| | front | {64} µs |"],
      derive=["$0 ~2", "$1 ~1", "10**3 / $1 ~1", "10**3 / $0 ~1.5"],
      scope="section"),
    F(SCA, "One Redis core ran {95}k GETs a second with 50 connections. It spent "
           "{41} µs per session read",
      "2026-11-25-cluster.md",
      ["**{95,465} GET/s", "| | Redis (one `GETEX`) | 43 µs | {41} µs |"],
      derive=["$0 / 10**3", "$1"], given=["50"], scope="section"),
    F(SCA, "So one Redis serves roughly {25}–{95}k session reads a second. At "
           "{1,500} to {4,000} notes pages a second a core, that is the session "
           "reads of some {6} to {60} such application cores",
      "2026-11-25-cluster.md",
      ["**{95,465} GET/s", "| | Redis (one `GETEX`) | 43 µs | {41} µs |",
       "notes page {262} and 317 µs", "| application host | {650} µs |"],
      derive=["10**3 / $1 ~1", "$0 / 10**3", "10**6 / $3 ~50", "10**6 / $2 ~200",
              "10**6 / $1 / (10**6 / $2) ~0.5", "$0 / (10**6 / $3) ~4"],
      scope="section"),

    # ---- docs/shared.md
    F(SHA, "some {3} to {9} million `incr`, `get` or `put` of small values per "
           "second on a 2-core machine",
      "2026-11-23-shared.md",
      ["| 1 | get | 1 threads | {3192451} |", "| 2 | put | 1 threads | {9119179} |"],
      derive=["$0 / 10**6", "$1 / 10**6"], given=["2"]),
    F(SHA, "Redis over loopback through Jedis, from the same handler: {34} to "
           "{78} thousand a second, {70} to {230} times fewer",
      "2026-11-23-shared.md",
      ["| 1 | get | event loop | 5925132 | {34328} |",
       "| 2 | get | 4 threads | 8253860 | {78432} |",
       "stays {70} to {230} times slower"],
      derive=["$0 / 10**3", "$1 / 10**3", "$2", "$3"]),
    F(SHA, "{10} µs median with one worker, {13} µs with two, against {42} and "
           "{61} µs for Redis pub/sub over loopback",
      "2026-11-23-shared.md",
      ["| 1 | jvm_topic | {10.0} |", "| 2 | jvm_topic | {13.4} |",
       "| 1 | Redis pub/sub | {42.0} |", "| 2 | Redis pub/sub | {61.2} |"]),

    # ---- docs/servlet.md
    F("docs/servlet.md",
      "at {1.58}-{1.65} times the proxy's rate and {1.17} times Tomcat's own, "
      "with {34}-{35} µs of CPU a request against {42} for Tomcat alone and "
      "{66}-{67} behind the proxy",
      "2026-11-29-servlet.md",
      ["at {1.58}-{1.65} times the rate of nginx in front of Tomcat",
       "and {1.17} times Tomcat alone, with {34}-{35} µs of CPU a request "
       "against {42} (Tomcat alone) and {66}-{67} (proxy and Tomcat)"]),

    F("docs/servlet.md",
      "nginx-jvm spent {34.6} µs of CPU on a request for a `@RestController`'s "
      "string against {39.6} for Boot's own Tomcat and {73.6} behind the proxy, "
      "and {64.0} µs on a Thymeleaf page against {62.5} and {100.1}",
      "2026-11-29-servlet-spring.md",
      ["| spring-hello | nginx-jvm | 12976 (11381-20326) | {34.6} (29.1-36.2) |",
       "| spring-hello | direct | 14523 (12825-19765) | {39.6} (32.3-43.3) |",
       "| spring-hello | proxy | 14885 (10518-17279) | {73.6} (68.0-78.8) |",
       "round 3 spring-page nginx-jvm 12878 req/s {64.0} us",
       "round 3 spring-page direct 10037 req/s {62.5} us",
       "round 3 spring-page proxy 13194 req/s {100.1} us"]),
    F("docs/servlet.md", "the page's first round cost {338.1} µs a request",
      "2026-11-29-servlet-spring.md",
      ["round 1 spring-page nginx-jvm 987 req/s {338.1} us"]),
    F("docs/servlet.md",
      "each worker took {93} MB (PSS) with the class cache and {106} MB without, "
      "against {157} MB for `java -jar` with the JDK's defaults and {111} MB with "
      "the collector",
      "2026-11-29-servlet-spring.md",
      ["| nginx-jvm --jar, class cache (AppCDS) | 73.24 (68.70-77.77) | 37.75 (37.38-38.13) | {93} (92-95) |",
       "| nginx-jvm --jar, --cache off | 72.13 (70.16-74.10) | 41.30 (38.96-43.63) | {106} (101-112) |",
       "| java -jar | 59.10 (54.06-64.14) | 59.10 (54.06-64.14) | {157} (147-168) |",
       "| java -jar, the workers' GC and heap options | 65.03 (60.19-69.86) | 65.03 (60.19-69.86) | {111} (107-114) |"]),
    F("docs/servlet.md",
      "A worker's JVM started in {37.75} s with the class cache and {41.30} s "
      "without, `java -jar` in {59.10} s, and in {22.89} s with Boot's own CDS",
      "2026-11-29-servlet-spring.md",
      ["| nginx-jvm --jar, class cache (AppCDS) | 73.24 (68.70-77.77) | {37.75} (37.38-38.13) |",
       "| nginx-jvm --jar, --cache off | 72.13 (70.16-74.10) | {41.30} (38.96-43.63) |",
       "| java -jar | 59.10 (54.06-64.14) | {59.10} (54.06-64.14) |",
       "| java -jar, extracted, Boot's CDS | {22.89} (19.32-26.47) |"]),

    # ---- README.md
    F(README, "{432} bytes each ({18,976} under a limit of {20,000} were {8.2} MB "
              "of each worker's memory",
      "2026-11-27-memory.md",
      ["{432} bytes each", "{18,976} under this machine's limit of {20,000}",
       "18,976 are one {8.2} MB anonymous mapping per worker"]),
    F(README, "later starts take about {0.4} s for a small handler and {1.3} s "
              "for the Compojure example",
      "2026-11-23-start-memory-reload.md",
      ["| tiny (clojure.core only, `bench.core/handler`) | 1.4 s | 1.37 s | **{0.39} s**",
       "| Compojure example (`hello.core/app`) | 5.8 s | 4.43 s | **{1.31} s**"]),
    F(README, "make soak # about {11} minutes: millions of requests and {10,000} clients",
      "2026-11-27-soak.md", ["{11} minutes in all", "{10000} clients (4 threads"]),
]

ByTest = namedtuple("ByTest", "doc quote test bounds")

# Figures a test measures as it runs; no results file keeps them. bounds:
# words of the test file with the doc's figures in braces, in the quote's order.
TESTED = [
    ByTest(OPS, "checks that both serve a save within its bound of {1} s",
           "tests/test_image.py", ["assert max(served.values()) < {1.0}, served"]),
    ByTest(OPS, "both workers answered 46.6 s after `podman run` at the first "
                "start and 20.6 s at the second", "tests/test_image.py", []),
    ByTest(OPS, "0.29 to 0.53 s from the save until both served it over five "
                "runs, loop, pool and virtual (the test's bound is {1} s)",
           "tests/test_dev.py", ["assert slowest < {1.0}, after"]),
    ByTest(OPS, "each exits 1 with the cause, in 1 to 24 s on a loaded 2-core "
                "machine", "tests/test_dev.py", []),
    ByTest(OPS, "16 messages in one write, echoed in at most {3} segments; "
                "{12} of {16} without",
           "tests/test_websocket.py",
           ["in at most {3} data segments (the first alone, the rest corked "
            "together; {12} of {16} without, measured)"]),
    ByTest(DIR, "100 ms (measured: 10 to 110 ms on a loaded machine, "
                "tests/test_warmup.py)", "tests/test_warmup.py", []),
    ByTest(DIR, "with 2,000 sockets a batch and a fixed, pre-touched heap: about "
                "1 KB of the worker's resident memory each",
           "tests/test_websocket_deflate.py", []),
    ByTest("docs/projects.md", "about 9 s and 3.5 s here, as "
                               "`tests/test_projects.py` prints its commands' times",
           "tests/test_projects.py", []),
    ByTest("docs/projects.md", "within a second of the save: `tests/test_dev.py` "
                               "measures it", "tests/test_dev.py", []),
    ByTest(INT, "all answered in 1.5 to 2.6 s, 64 in flight at most (worker_connections "
                "256). A 64 MB body relayed through a handler to a client that reads "
                "64 KB and sleeps 20 ms every 2 MB: the worker's RSS rose 0.3 to 1.1 MB "
                "(loop, pool, virtual, coloop), and the backend was never more than 7 "
                "to 9.5 MB ahead of the client (loopback TCP buffers, nginx's proxy "
                "buffers, the pair's buffer and the call's 256 KB); a body never read "
                "stopped the backend 3.9 to 4.4 MB in",
           "tests/test_client.py", []),
]

# What the measurement patterns find that is no measurement: (doc, words).
NOT_MEASURED = [
    (DIR, "`proxy_max_temp_file_size` (1 GB by default)"),   # nginx's default
    (HAN, "past 256 KB unread nginx"),              # a call's read-ahead, a limit
    (HAN, "at most 256 KB ahead of what"),
    (INT, "the reader holds 256 KB)"),
    (INT, "at most 4 pieces of 64 KB unwritten"),
    (INT, "reader is below 64 KB again"),
    (INT, "(about 200 KB on Linux loopback"),       # the kernel's buffer, its default
    (INT, "the call holds 256 KB unread"),
    (INT, "leaves the queue at 256 KB"),            # a call's read-ahead, a limit
    (INT, "the call pauses at 256 KB"),             # a call's read-ahead, a limit
    (INT, "below 64 KB again, posts"),
    (INT, "reads the stream 64 KB at a time"),
    (OPS, "the xz of the 100 MB of jars"),          # the package's size, as dpkg-deb says
    (OPS, "The image is 539 MB"),                   # as `make image ARCH=arm64` prints it
    ("docs/servlet.md", "the piece in flight (64 KB at most)"),   # limits of the seam
    ("docs/servlet.md", "(beyond 1 MB read and"),
    (OPS, "buckets 256 B to 64 MB, by 4"),          # histogram buckets
    (OPS, "buckets 10 µs to 1 s"),
    (OPS, "16 KB"),                                 # a line's cut
    (OPS, "1 MB, declared by"),                     # the status zone's size
    (OPS, "with a 3.5 s lifetime"),
    (DIR, "-Xmx256m` the heaps may grow to 1 GB"),  # arithmetic of an example
    (DIR, "pieces of at most 32 KB"),
    (DIR, "256 KB for 15, the default"),            # zlib's arithmetic
    (DIR, "one inflate stream (about 40 KB)"),
    (DIR, "about 300 KB with zlib's defaults, 3 GB for 10,000"),
    (DIR, "by up to 1 MB of messages"),
    (DIR, "the queue and the 1 MB"),
    (DIR, "1 MB). A location"),                     # the status zone's size
    (OPS, "at most 256 KB a worker"),               # a profile's part, a limit
    (HAN, "at most 128 KB of it"),                  # the loop's budget
    (HAN, "pieces of at most 32 KB"),
    (HAN, "by up to 1 MB, then fails"),
    (HAN, "the queue and that 1 MB"),
    (HAN, "up to 1 MB, then its `write` throws"),
    (HAN, "(in pieces of up to 16 KB"),
    (HAN, "A 1 GB upload"),
    (INT, "four buffers of 32 KB"),
    (INT, "at most 256 KB"),
    (SCA, "(64 KB)"),
    (SCA, "(1 KB from the handler, loop)"),         # the page's size
    (SHA, "(a few KB)"),
    ("docs/security.md", "(at most 128 KB per event)"),
    ("docs/sanitizers.md", "(256 MB"),
    ("docs/projects.md", "over 4 MB"),
    (README, "321 MB"),                             # the image's size, as `make image` prints it
    (README, "a 1 GB upload"),
    (README, "at most 65,536"),
]

MEASURE = [
    r"\d[\d,.]*k? ?(?:µs|ns)\b",
    r"\d[\d,.]*k? ?(?:req/s|requests/s|messages/s|GET/s|SET/s)",
    r"\b\d\.\d+(?:[-–]\d\.\d+)? of\b",
    r"\bp99(?:\.9)? (?:of )?\d",
    r"\d[\d,.]* CPU seconds",
    r"\b\d[\d,]*(?:\.\d+)? (?:B|bytes) (?:a|per) (?:request|connection|message)",
    r"\b\d[\d,]*(?:\.\d+)?(?:[–-]\d[\d,]*(?:\.\d+)?)? ?(?:B|KB|MB|GB)\b",
    r"\b\d+\.\d+ s\b",
]

MARK = re.compile(r"\{([^{}]+)\}")
NUM = re.compile(r"(?<![\w.$])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
# what is not a figure of the words: code, links, file names, dates, versions
NOT_FIGURES = re.compile(r"`[^`]*`|\]\([^)]*\)|[\w./-]+\.(?:md|py|json|png|java|sh|c|h)\b"
                         r"|\d{4}-\d{2}-\d{2}|\d+\.\d+\.\d+|JDK \d+")


def norm(s):
    return " ".join(s.split())


def plain(words):
    """The words as they read, braces taken off."""
    return norm(MARK.sub(lambda m: m.group(1), words))


def marks(words):
    return MARK.findall(words)


def number(s):
    return float(s.replace(",", ""))


def blocks(text):
    """Paragraphs, list items, table rows and headings, each a string."""
    out, cur = [], []

    def flush():
        if cur:
            out.append(norm("\n".join(cur)))
            cur.clear()
    fenced = False
    for line in text.splitlines():
        s = line.strip()
        if not s:
            flush()
            continue
        if s.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"(?:[-*]|\d+\.)\s|\||#", s):
            flush()
        cur.append(line)
        if not fenced and (s.startswith("|") or s.startswith("#")):
            flush()
    flush()
    return out


def sections(text):
    return [norm(s) for s in re.split(r"^(?=#{1,6} )", text, flags=re.M)]


def read(path):
    return (ROOT / path).read_text()


def where(doc, quote, scope="paragraph"):
    """The one paragraph (or section) of doc holding the quote."""
    text = read(doc)
    parts = blocks(text) if scope == "paragraph" else sections(text)
    found = [p for p in parts if plain(quote) in p]
    assert found, "%s: the words %r are not in one %s" % (doc, plain(quote), scope)
    assert len(found) == 1, "%s: the words %r are in %d places" % (doc, plain(quote), len(found))
    return found[0]


def evaluate(expr, values):
    expr = re.sub(r"\$(\d+)", lambda m: repr(values[int(m.group(1))]), expr)
    assert re.fullmatch(r"[\d.eE+\-*/() ]+", expr), expr
    return eval(expr, {"__builtins__": {}})


def agrees(figure, expr, values):
    """Whether the doc's figure is expr's value to the doc's precision."""
    expr, _, tol = expr.partition("~")
    got = evaluate(expr, values)
    if tol:
        return abs(got - number(figure)) <= float(tol) + 1e-9, got
    want = Decimal(figure.replace(",", ""))
    rounded = Decimal(repr(round(got, 9))).quantize(
        Decimal(1).scaleb(want.as_tuple().exponent), ROUND_HALF_UP)
    return rounded == want, got


def unlisted_numbers(quote, given):
    """Numbers of the quote that are neither a figure nor given."""
    rest = NOT_FIGURES.sub(" ", MARK.sub(" # ", quote))
    found = NUM.findall(rest)
    left = list(given)
    extra = []
    for n in found:
        if n in left:
            left.remove(n)
        else:
            extra.append(n)
    return extra, left


def ident(f):
    return "%s:%s" % (Path(f.doc).name, plain(f.quote)[:40])


@pytest.mark.parametrize("fig", FIGURES, ids=ident)
def test_figure_agrees_with_its_results_file(fig):
    scope_text = where(fig.doc, fig.quote, fig.scope)
    source = RESULTS / fig.source
    assert source.exists(), "no %s" % source
    assert fig.source in scope_text, \
        "%s does not name %s beside %r" % (fig.doc, fig.source, plain(fig.quote))
    text = norm(read(source.relative_to(ROOT)))
    values = []
    for words in fig.evidence:
        assert plain(words) in text, "%s lacks %r" % (fig.source, plain(words))
        values += [number(v) for v in marks(words)]
    figures = marks(fig.quote)
    assert figures, "no figure in braces"
    derive = fig.derive or ["$%d" % i for i in range(len(values))]
    assert len(derive) == len(figures), \
        "%d figures in the doc's words, %d derivations" % (len(figures), len(derive))
    wrong = []
    for figure, how in zip(figures, derive):
        for expr in (how if isinstance(how, tuple) else (how,)):
            ok, got = agrees(figure, expr, values)
            if not ok:
                wrong.append((figure, expr, round(got, 4)))
    assert wrong == [], "the doc's figure, its source, the source's value"
    extra, unused = unlisted_numbers(fig.quote, fig.given)
    assert extra == [], "numbers of the quote neither in braces nor given"
    assert unused == [], "given numbers the quote lacks"


@pytest.mark.parametrize("t", TESTED, ids=ident)
def test_figure_measured_by_a_test_names_it(t):
    block = where(t.doc, t.quote)
    assert (ROOT / t.test).exists(), t.test
    assert Path(t.test).name in block, "%s does not name %s" % (t.doc, t.test)
    text = norm(read(t.test))
    values = []
    for words in t.bounds:
        assert plain(words) in text, "%s lacks %r" % (t.test, plain(words))
        values += marks(words)
    figures = marks(t.quote)
    assert len(figures) == len(values)
    assert all(number(a) == number(b) for a, b in zip(figures, values)), (figures, values)


def covered_spans(doc):
    text = norm(read(doc))
    spans = []
    words = [f.quote for f in FIGURES if f.doc == doc] + \
            [t.quote for t in TESTED if t.doc == doc] + \
            [w for d, w in NOT_MEASURED if d == doc]
    for w in words:
        w = plain(w)
        start = text.find(w)
        while start >= 0:
            spans.append((start, start + len(w)))
            start = text.find(w, start + 1)
    return text, spans


DOCS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")) + [README]


@pytest.mark.parametrize("doc", DOCS)
def test_every_measurement_is_in_the_table(doc):
    text, spans = covered_spans(doc)
    loose = []
    for pattern in MEASURE:
        for m in re.finditer(pattern, text):
            if not any(a <= m.start() and m.end() <= b for a, b in spans):
                loose.append(text[max(0, m.start() - 50):m.end() + 10])
    assert loose == [], "%s: figures with no row in FIGURES, TESTED or NOT_MEASURED" % doc


def test_the_tables_are_read():
    assert len(FIGURES) > 50 and len({f.source for f in FIGURES}) > 15
    for doc, words in NOT_MEASURED:
        assert plain(words) in norm(read(doc)), "NOT_MEASURED: %s lacks %r" % (doc, words)


def test_coloop_allocation_is_the_measured_one():
    """Issue 46's case: operations.md gave coloop about 790 B a request."""
    text = norm(read(OPS))
    assert "790" not in text
    assert "and 361 in coloop too" in text
