package rmgr

import "github.com/walscope/walscope/decode"

// AppendDesc appends the resource manager's description of rec, the text
// pg_waldump prints after the record type name (rm_desc).
func AppendDesc(dst []byte, rec *decode.Record) []byte {
	return dst
}
