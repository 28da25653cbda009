package tuple_test

import (
	"encoding/binary"
	"fmt"

	"github.com/walscope/walscope/tuple"
)

// Deform a heap tuple of a table (id int4, note text, added int8 DEFAULT 42)
// whose last column was added after the tuple was written: the tuple holds
// two attributes, the third reads as its attmissingval.
func ExampleDeform() {
	// HeapTupleHeaderData: natts 2, no nulls, t_hoff 24; then id = 7 and a
	// 1-byte-header text "hi".
	tup := make([]byte, 24)
	binary.LittleEndian.PutUint16(tup[18:], 2) // t_infomask2: natts
	tup[22] = 24                               // t_hoff
	tup = binary.LittleEndian.AppendUint32(tup, 7)
	tup = append(tup, 3<<1|1, 'h', 'i')

	desc := []tuple.Attr{
		{Name: "id", TypeOID: 23, Len: 4, Align: 'i', ByVal: true},
		{Name: "note", TypeOID: 25, Len: -1, Align: 'i'},
		{Name: "added", TypeOID: 20, Len: 8, Align: 'd', ByVal: true,
			HasMissing: true, Missing: binary.LittleEndian.AppendUint64(nil, 42)},
	}
	vals, _, err := tuple.Deform(nil, tup, desc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("id:", binary.LittleEndian.Uint32(vals[0].Raw), vals[0].Form)
	note, _ := vals[1].Detoast(nil, nil)
	fmt.Printf("note: %q %s\n", note, vals[1].Form)
	fmt.Println("added:", binary.LittleEndian.Uint64(vals[2].Raw), "missing:", vals[2].Missing)
	// Output:
	// id: 7 fixed
	// note: "hi" short
	// added: 42 missing: true
}

// Reassemble an external value from its TOAST relation's chunks, given in
// any order, as toast_fetch_datum does.
func ExampleAssembleChunks() {
	chunks := []tuple.Chunk{{Seq: 1, Data: []byte("ld")}, {Seq: 0, Data: []byte("hello wor")}}
	v, err := tuple.AssembleChunks(nil, 16384, 11, 9, chunks)
	fmt.Printf("%q %v\n", v, err)
	_, err = tuple.AssembleChunks(nil, 16384, 12, 9, chunks)
	fmt.Println(err)
	// Output:
	// "hello world" <nil>
	// toast value 16384: unexpected chunk size 2 (expected 3) in chunk 1 of 2: corrupt tuple data
}
