package export

// The tables of `walscope export` (docs/schema.md documents them).

// SchemaVersion is written in every exported file's key-value metadata
// (walscope.schema_version) and, for JSON Lines and CSV, in a sidecar
// _schema.json of each table directory. It changes when a column changes
// meaning or type; columns may be added without a change.
const SchemaVersion = "1"

// Kind is a column's type.
type Kind uint8

// Column kinds: in Parquet, unsigned integers carry their logical type
// (UINT_16/32/64), Time is a TIMESTAMP(MICROS, UTC).
const (
	Uint64 Kind = iota
	Uint32
	Uint16
	Uint8
	Int32
	Bool
	String
	Time
)

// Column is one column of a table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
	// Dict marks low cardinality: dictionary-encoded in Parquet (RLE of
	// indices, then zstd of little); strings are Arrow dictionaries too.
	Dict bool
	// Stats keeps min/max statistics for a Dict string column (other
	// columns always have them): for columns whose values cluster by
	// position (a segment's name), which readers can prune row groups on.
	Stats bool
}

// Schema is one table's columns.
type Schema struct {
	Table   string
	Columns []Column
}

// Value is one cell: U holds unsigned and boolean values (1 for true) and
// Time as microseconds since the Unix epoch (as int64 bits), S strings.
type Value struct {
	U    uint64
	S    string
	Null bool
}

// Row is one row, a Value per column of its schema.
type Row []Value

// Index returns the position of the named column, or -1.
func (s *Schema) Index(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// With returns the schema with extra columns appended.
func (s Schema) With(cols ...Column) *Schema {
	s.Columns = append(append([]Column(nil), s.Columns...), cols...)
	return &s
}

// Table names.
const (
	TableRecords      = "records"
	TableBlocks       = "blocks"
	TableCheckpoints  = "checkpoints"
	TableTransactions = "transactions"
	TableSegments     = "segments"
)

// Tables lists the tables in the order they are documented.
var Tables = []string{TableRecords, TableBlocks, TableCheckpoints, TableTransactions, TableSegments}

// Record columns, by position (RecordsSchema).
const (
	RecLSN = iota
	RecEndLSN
	RecPrevLSN
	RecTimeline
	RecSegment
	RecXID
	RecToplevelXID
	RecRmgr
	RecRecordType
	RecTotalLength
	RecMainDataLength
	RecBlockCount
	RecImageCount
	RecImageBytes
	RecImageBytesUncompressed
	RecCompression
	RecCheckpointCycle
	RecXactTime
	RecPGVersion
	RecXlogBlcksz
	RecSegmentSize
	RecInfo
	recColumns
)

// RecordsSchema is the records table: one row per record.
var RecordsSchema = &Schema{Table: TableRecords, Columns: []Column{
	{Name: "lsn", Kind: Uint64},
	{Name: "end_lsn", Kind: Uint64},
	{Name: "prev_lsn", Kind: Uint64},
	{Name: "timeline", Kind: Uint32},
	{Name: "segment", Kind: String, Dict: true, Stats: true},
	{Name: "xid", Kind: Uint32},
	{Name: "toplevel_xid", Kind: Uint32},
	{Name: "rmgr", Kind: String, Dict: true},
	{Name: "record_type", Kind: String, Dict: true},
	{Name: "total_length", Kind: Uint32},
	{Name: "main_data_length", Kind: Uint32},
	{Name: "block_count", Kind: Uint8},
	{Name: "image_count", Kind: Uint8},
	{Name: "image_bytes", Kind: Uint32},
	{Name: "image_bytes_uncompressed", Kind: Uint32},
	{Name: "compression", Kind: String, Dict: true},
	{Name: "checkpoint_cycle", Kind: Uint64},
	{Name: "xact_time", Kind: Time, Nullable: true},
	{Name: "pg_version", Kind: Uint16},
	{Name: "xlog_blcksz", Kind: Uint32},
	{Name: "segment_size", Kind: Uint32},
	{Name: "info", Kind: Uint8},
}}

// DescriptionColumn is added to records with --desc.
var DescriptionColumn = Column{Name: "description", Kind: String}

// LabelColumn is added to every table with --label.
var LabelColumn = Column{Name: "label", Kind: String, Dict: true, Stats: true}

// BlocksSchema is the blocks table: one row per block reference.
var BlocksSchema = &Schema{Table: TableBlocks, Columns: []Column{
	{Name: "lsn", Kind: Uint64},
	{Name: "block_id", Kind: Uint8},
	{Name: "tablespace", Kind: Uint32},
	{Name: "database", Kind: Uint32},
	{Name: "relfilenode", Kind: Uint32},
	{Name: "fork", Kind: String, Dict: true},
	{Name: "block", Kind: Uint32},
	{Name: "data_length", Kind: Uint16},
	{Name: "has_image", Kind: Bool},
	{Name: "image_length", Kind: Uint16},
	{Name: "hole_offset", Kind: Uint16},
	{Name: "hole_length", Kind: Uint16},
	{Name: "compression", Kind: String, Dict: true},
	{Name: "apply_image", Kind: Bool},
	{Name: "will_init", Kind: Bool},
	{Name: "rmgr", Kind: String, Dict: true},
}}

// CheckpointsSchema is the checkpoints table: one row per checkpoint cycle.
var CheckpointsSchema = &Schema{Table: TableCheckpoints, Columns: []Column{
	{Name: "redo_lsn", Kind: Uint64},
	{Name: "end_lsn", Kind: Uint64},
	{Name: "checkpoint_lsn", Kind: Uint64, Nullable: true},
	{Name: "time", Kind: Time, Nullable: true},
	{Name: "kind", Kind: String, Dict: true},
	{Name: "wal_level", Kind: String, Nullable: true, Dict: true},
	{Name: "full_page_writes", Kind: Bool, Nullable: true},
	{Name: "records", Kind: Uint64},
	{Name: "record_bytes", Kind: Uint64},
	{Name: "wal_bytes", Kind: Uint64},
	{Name: "images", Kind: Uint64},
	{Name: "image_bytes", Kind: Uint64},
	{Name: "distinct_blocks_imaged", Kind: Uint64},
	{Name: "image_bytes_tenth_1", Kind: Uint64},
	{Name: "image_bytes_tenth_2", Kind: Uint64},
	{Name: "image_bytes_tenth_3", Kind: Uint64},
	{Name: "image_bytes_tenth_4", Kind: Uint64},
	{Name: "image_bytes_tenth_5", Kind: Uint64},
	{Name: "image_bytes_tenth_6", Kind: Uint64},
	{Name: "image_bytes_tenth_7", Kind: Uint64},
	{Name: "image_bytes_tenth_8", Kind: Uint64},
	{Name: "image_bytes_tenth_9", Kind: Uint64},
	{Name: "image_bytes_tenth_10", Kind: Uint64},
}}

// TransactionsSchema is the transactions table: one row per transaction end
// (and one per transaction whose end the WAL read does not hold).
var TransactionsSchema = &Schema{Table: TableTransactions, Columns: []Column{
	{Name: "xid", Kind: Uint32},
	{Name: "outcome", Kind: String, Dict: true},
	{Name: "prepared", Kind: Bool},
	{Name: "end_lsn", Kind: Uint64, Nullable: true},
	{Name: "time", Kind: Time, Nullable: true},
	{Name: "timeline", Kind: Uint32},
	{Name: "records", Kind: Uint64},
	{Name: "record_bytes", Kind: Uint64},
	{Name: "wal_bytes", Kind: Uint64},
	{Name: "images", Kind: Uint64},
	{Name: "image_bytes", Kind: Uint64},
	{Name: "subtransactions", Kind: Uint32},
}}

// SegmentsSchema is the segments table: one row per segment file.
var SegmentsSchema = &Schema{Table: TableSegments, Columns: []Column{
	{Name: "segment", Kind: String},
	{Name: "timeline", Kind: Uint32},
	{Name: "segno", Kind: Uint64},
	{Name: "size", Kind: Uint64, Nullable: true},
	{Name: "compressed_size", Kind: Uint64, Nullable: true},
	{Name: "compression", Kind: String, Nullable: true, Dict: true},
	{Name: "first_lsn", Kind: Uint64, Nullable: true},
	{Name: "last_lsn", Kind: Uint64, Nullable: true},
	{Name: "end_lsn", Kind: Uint64, Nullable: true},
	{Name: "records", Kind: Uint64},
	{Name: "record_bytes", Kind: Uint64},
	{Name: "validation", Kind: String, Dict: true},
}}

// SchemaOf returns the base schema of a table, or nil.
func SchemaOf(table string) *Schema {
	switch table {
	case TableRecords:
		return RecordsSchema
	case TableBlocks:
		return BlocksSchema
	case TableCheckpoints:
		return CheckpointsSchema
	case TableTransactions:
		return TransactionsSchema
	case TableSegments:
		return SegmentsSchema
	}
	return nil
}
