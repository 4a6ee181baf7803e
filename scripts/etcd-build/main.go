// etcd's own command, built from its Go module: Debian's etcd 3.4.23 predates the watch
// progress fixes (3.4.31+, 3.5.13+) that kube-apiserver 1.32's watch cache relies on.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
