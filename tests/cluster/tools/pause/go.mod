module kubevirtci.io/dra-cpu/tests/cluster/tools/pause

go 1.26.0
