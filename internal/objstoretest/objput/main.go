// Command objput uploads a local directory to an object store location
// (s3://, gs://, azblob://) with xlog/objstore's Upload: the tests and
// scripts/bench-objstore.sh use it to put archives where walscope reads
// them.
//
//	go run ./internal/objstoretest/objput [-overwrite] DIR URL
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/walscope/walscope/xlog/objstore"
)

func main() {
	overwrite := flag.Bool("overwrite", false, "replace objects under the prefixes written")
	concurrency := flag.Int("j", 8, "uploads in flight")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: objput [-overwrite] [-j N] DIR URL")
		os.Exit(2)
	}
	err := objstore.Upload(context.Background(), flag.Arg(0), flag.Arg(1), objstore.UploadOptions{Overwrite: *overwrite, Concurrency: *concurrency})
	if err != nil {
		fmt.Fprintln(os.Stderr, "objput:", err)
		os.Exit(1)
	}
}
