package objstore_test

import (
	"fmt"

	"github.com/walscope/walscope/xlog/objstore"
)

// URLs name a store, a bucket and a prefix; anything else is a local path.
func ExampleParseURL() {
	for _, s := range []string{"s3://backups/pgbackrest/archive/main/", "gs://wal/walg", "azblob://wal", "/var/lib/pgbackrest"} {
		loc, err := objstore.ParseURL(s)
		if err != nil {
			fmt.Println(objstore.IsURL(s), "local path")
			continue
		}
		fmt.Printf("%v %s %s %q\n", objstore.IsURL(s), loc.Scheme, loc.Bucket, loc.Key)
	}
	// Output:
	// true s3 backups "pgbackrest/archive/main"
	// true gs wal "walg"
	// true azblob wal ""
	// false local path
}
