#!/usr/bin/env bash
# One round of the spike's measurements (results-2026-11-29.md): each
# configuration once, interleaved, one line each.  About 4 minutes.
# As run on 2026-11-29: the engines now take $uri from the request's
# description (Request.path()), and the "uri=raw" switch it measured
# against is gone, so those rows now measure the same as the others.
cd "$(dirname "$0")"
RAW="--jvm-option -Dnginx.jvm.servlet.uri=raw"
for cfg in "plain" "tomcat" "jetty" "tomcat $RAW" "jetty $RAW" "plain --mode coloop" "tomcat --mode coloop" "jetty --mode coloop"; do
  set -- $cfg
  e=$1; shift
  out=$(./spike.sh $e 18486 "$@" 2>&1)
  first=$(echo "$out" | sed -n 's/.*first 200 after \([0-9]*\) ms.*/\1/p')
  started=$(echo "$out" | grep "started in" | tail -1 | grep -o "started in [0-9]* ms, [0-9]* ms" | tr -dc '0-9 ,')
  ready=$(echo "$out" | grep -o "ready [0-9]* ms" | tail -1 | tr -dc '0-9')
  rps=$(echo "$out" | grep Requests/sec | awk '{print $2}')
  lat=$(echo "$out" | grep Latency | awk '{print $2, $3, $4}')
  cpu=$(echo "$out" | grep -o "CPU [0-9]* us" | tr -dc '0-9')
  mem=$(echo "$out" | grep "== worker.*Rss" | sed 's/== worker [0-9]*: //' | tr -s ' ' )
  printf '%-32s first=%5s engine=%-11s ready=%5s rps=%9s cpu_us=%3s lat=%-24s %s\n' "$(echo $cfg | sed 's/--jvm-option -Dnginx.jvm.servlet.uri=raw/uri=raw/')" "$first" "$started" "$ready" "$rps" "$cpu" "$lat" "$mem"
done
