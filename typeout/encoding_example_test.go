package typeout_test

import (
	"fmt"

	"github.com/walscope/walscope/typeout"
)

// Text stored in an EUC_JP database (pg_database.encoding 1) converted to
// UTF-8 as the server converts it for a client whose client_encoding is
// UTF8; a code the server has no UTF8 equivalent for is an error naming
// its bytes, as the server's is.
func ExampleAppendUTF8() {
	const eucJP = 1
	utf8, err := typeout.AppendUTF8(nil, []byte("\xc6\xfc\xcb\xdc \x8e\xb6\x8e\xc0"), eucJP)
	fmt.Printf("%s %v\n", utf8, err)
	_, err = typeout.AppendUTF8(nil, []byte("\xa9\xa1"), eucJP)
	fmt.Println(err)
	// Output:
	// 日本 ｶﾀ <nil>
	// character with byte sequence 0xa9 0xa1 in encoding EUC_JP: character has no equivalent in UTF8
}
