module nginx-jvm/bench/connload

go 1.21
