"""The benchmark suite behind `make bench` (bench/bench.py).

servers: the servers under test, started and stopped by PID, and the routes
         they all serve;
load:    wrk, oha and the idle-connection client, with pure parsers of their
         output and of /proc;
report:  the Markdown report, a pure function of the measurements.
"""
