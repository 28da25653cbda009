// Command objls lists a store prefix with xlog/objstore's Tree (the
// listing every command does first) and prints the entries found and the
// time taken: scripts/bench-objstore.sh measures listing with it.
//
//	go run ./internal/objstoretest/objls URL
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/walscope/walscope/xlog/objstore"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: objls URL")
		os.Exit(2)
	}
	t0 := time.Now()
	t, err := objstore.Open(context.Background(), os.Args[1], objstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "objls:", err)
		os.Exit(1)
	}
	ents, err := t.ReadDir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "objls:", err)
		os.Exit(1)
	}
	fmt.Printf("%d entries listed in %.2f s\n", len(ents), time.Since(t0).Seconds())
}
