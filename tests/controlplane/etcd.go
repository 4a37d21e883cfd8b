package main

import (
	"go.etcd.io/etcd/server/v3/etcdmain"
	"os"
)

// runEtcd runs etcd's own command line (etcdmain), so every etcd flag works as documented.
func runEtcd() int {
	etcdmain.Main(os.Args)
	return 0
}
