module nginx-jvm/bench/wsload

go 1.21
