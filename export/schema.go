package export

// The tables of `walscope export` (docs/schema.md documents them).

// SchemaVersion is written in every exported Parquet file's key-value
// metadata (walscope.schema_version). It changes when a column changes
// meaning or type; columns may be added without a change. Version 2 made
// every integer signed (Spark, Hive and Trino refuse or widen unsigned
// Parquet types), added the X/Y text twin of each LSN column and the
// relation names (docs/schema.md lists the changes).
const SchemaVersion = "2"

// Kind is a column's type.
type Kind uint8

// Column kinds. In Parquet: Int64 and Int32 are the plain signed physical
// types (no logical type: every engine reads them natively), Time is an
// INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true), String a UTF8 byte array.
// Every value people add up (lengths, counts, bytes) is Int64, whatever
// its range: polars sums an Int32 column into an Int32, which overflows;
// Int32 is kept for versions, sizes and flags. LSN is an Int64 column
// followed by its text twin (the column's name with
// "_text": PostgreSQL's X/Y form, as pg_lsn prints it), made by the writers
// from the one Value.
const (
	Int64 Kind = iota
	Int32
	Bool
	String
	Time
	LSN
)

// Column is one column of a table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
	// Dict marks low cardinality: dictionary-encoded in Parquet (RLE of
	// indices, then zstd of little).
	Dict bool
	// Stats keeps min/max statistics for a Dict string column (other
	// columns always have them): for columns whose values cluster by
	// position (a segment's name), which readers can prune row groups on.
	Stats bool
	// Delta marks an Int64 column that rises by small steps, written
	// DELTA_BINARY_PACKED (as LSN and Time columns always are): packed,
	// they leave zstd little to do; lengths, xids and OIDs, which jump
	// about, are smaller and faster PLAIN.
	Delta bool
	// Precision and Scale are a Decimal column's (typed.go).
	Precision, Scale int
}

// TextSuffix names the text twin of an LSN column.
const TextSuffix = "_text"

// Schema is one table's columns.
type Schema struct {
	Table   string
	Columns []Column
}

// Value is one cell: U holds integers (as int64 bits: every value fits in
// 63 bits), booleans (1 for true) and Time as microseconds since the Unix
// epoch (as int64 bits), S strings; the typed kinds (typed.go) keep float
// bits and dates in U, byte arrays in S.
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

// FileColumn is a column as the files hold it: an LSN column is two.
type FileColumn struct {
	Name     string
	Kind     Kind // Int64, Int32, Bool, String or Time
	Nullable bool
	Dict     bool
	Stats    bool
	Delta    bool // DELTA_BINARY_PACKED (Int64 and Time)
	// Of is the position of the Row's Value the column is made from.
	Of int
	// LSNText marks the text twin of an LSN column (Kind String).
	LSNText bool
	// Precision and Scale are a Decimal column's.
	Precision, Scale int
}

// FileColumns returns the columns the files of s hold, in order: each LSN
// column is followed by its text twin.
func (s *Schema) FileColumns() []FileColumn {
	out := make([]FileColumn, 0, len(s.Columns)+4)
	for i, c := range s.Columns {
		f := FileColumn{Name: c.Name, Kind: c.Kind, Nullable: c.Nullable, Dict: c.Dict, Stats: c.Stats, Of: i,
			Delta: c.Delta || c.Kind == Time || c.Kind == LSN, Precision: c.Precision, Scale: c.Scale}
		if c.Kind != LSN {
			out = append(out, f)
			continue
		}
		f.Kind = Int64
		out = append(out, f, FileColumn{Name: c.Name + TextSuffix, Kind: String, Nullable: c.Nullable, Of: i, LSNText: true})
	}
	return out
}

// AppendLSN appends an LSN in PostgreSQL's X/Y form (upper-case hex, no
// leading zeros: pg_lsn's output, pg_waldump's).
func AppendLSN(b []byte, lsn uint64) []byte {
	b = appendHex(b, uint32(lsn>>32))
	b = append(b, '/')
	return appendHex(b, uint32(lsn))
}

func appendHex(b []byte, v uint32) []byte {
	const digits = "0123456789ABCDEF"
	if v == 0 {
		return append(b, '0')
	}
	var tmp [8]byte
	i := len(tmp)
	for v != 0 {
		i--
		tmp[i] = digits[v&0xF]
		v >>= 4
	}
	return append(b, tmp[i:]...)
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
	RecTablespace
	RecDatabase
	RecDatabaseName
	RecRelfilenode
	RecSchemaName
	RecRelationName
	RecRelkind
	recColumns
)

// relationColumns name the relation of a block reference (in records: of
// the first, the one `stats --by relation` counts the record for), from
// the same sources: the catalog file, then the names the WAL carries.
var relationColumns = []Column{
	{Name: "schema_name", Kind: String, Nullable: true, Dict: true},
	{Name: "relation_name", Kind: String, Nullable: true, Dict: true},
	{Name: "relkind", Kind: String, Nullable: true, Dict: true},
}

// databaseNameColumn names the database of a block reference (beside its
// OID): from the catalog file's datname, then the pg_database tuples the
// WAL carries; null for shared relations (database 0) and where neither
// knows it.
var databaseNameColumn = Column{Name: "database_name", Kind: String, Nullable: true, Dict: true}

// RecordsSchema is the records table: one row per record.
var RecordsSchema = &Schema{Table: TableRecords, Columns: append([]Column{
	{Name: "lsn", Kind: LSN},
	{Name: "end_lsn", Kind: Int64, Delta: true},
	{Name: "prev_lsn", Kind: Int64, Delta: true},
	{Name: "timeline", Kind: Int64, Dict: true},
	{Name: "segment", Kind: String, Dict: true, Stats: true},
	{Name: "xid", Kind: Int64, Dict: true},
	{Name: "toplevel_xid", Kind: Int64, Dict: true},
	{Name: "rmgr", Kind: String, Dict: true},
	{Name: "record_type", Kind: String, Dict: true},
	{Name: "total_length", Kind: Int64, Dict: true},
	{Name: "main_data_length", Kind: Int64, Dict: true},
	{Name: "block_count", Kind: Int64, Dict: true},
	{Name: "image_count", Kind: Int64, Dict: true},
	{Name: "image_bytes", Kind: Int64, Dict: true},
	{Name: "image_bytes_uncompressed", Kind: Int64, Dict: true},
	{Name: "compression", Kind: String, Dict: true},
	{Name: "checkpoint_cycle", Kind: Int64, Delta: true},
	{Name: "xact_time", Kind: Time, Nullable: true},
	{Name: "pg_version", Kind: Int32, Dict: true},
	{Name: "xlog_blcksz", Kind: Int32, Dict: true},
	{Name: "segment_size", Kind: Int32, Dict: true},
	{Name: "info", Kind: Int32, Dict: true},
	{Name: "tablespace", Kind: Int64, Nullable: true, Dict: true},
	{Name: "database", Kind: Int64, Nullable: true, Dict: true},
	databaseNameColumn,
	{Name: "relfilenode", Kind: Int64, Nullable: true, Dict: true},
}, relationColumns...)}

// DescriptionColumn is added to records with --desc.
var DescriptionColumn = Column{Name: "description", Kind: String}

// LabelColumn is added to every table with --label.
var LabelColumn = Column{Name: "label", Kind: String, Dict: true, Stats: true}

// Block columns, by position (BlocksSchema).
const (
	BlkLSN = iota
	BlkBlockID
	BlkTablespace
	BlkDatabase
	BlkDatabaseName
	BlkRelfilenode
	BlkFork
	BlkBlock
	BlkDataLength
	BlkHasImage
	BlkImageLength
	BlkHoleOffset
	BlkHoleLength
	BlkCompression
	BlkApplyImage
	BlkWillInit
	BlkRmgr
	BlkSchemaName
	BlkRelationName
	BlkRelkind
)

// BlocksSchema is the blocks table: one row per block reference.
var BlocksSchema = &Schema{Table: TableBlocks, Columns: append([]Column{
	{Name: "lsn", Kind: LSN},
	{Name: "block_id", Kind: Int32, Dict: true},
	{Name: "tablespace", Kind: Int64, Dict: true},
	{Name: "database", Kind: Int64, Dict: true},
	databaseNameColumn,
	{Name: "relfilenode", Kind: Int64, Dict: true},
	{Name: "fork", Kind: String, Dict: true},
	{Name: "block", Kind: Int64},
	{Name: "data_length", Kind: Int64, Dict: true},
	{Name: "has_image", Kind: Bool},
	{Name: "image_length", Kind: Int64, Dict: true},
	{Name: "hole_offset", Kind: Int64, Dict: true},
	{Name: "hole_length", Kind: Int64, Dict: true},
	{Name: "compression", Kind: String, Dict: true},
	{Name: "apply_image", Kind: Bool},
	{Name: "will_init", Kind: Bool},
	{Name: "rmgr", Kind: String, Dict: true},
}, relationColumns...)}

// CheckpointsSchema is the checkpoints table: one row per checkpoint cycle.
var CheckpointsSchema = &Schema{Table: TableCheckpoints, Columns: []Column{
	{Name: "redo_lsn", Kind: LSN},
	{Name: "end_lsn", Kind: LSN},
	{Name: "checkpoint_lsn", Kind: LSN, Nullable: true},
	{Name: "time", Kind: Time, Nullable: true},
	{Name: "kind", Kind: String, Dict: true},
	{Name: "wal_level", Kind: String, Nullable: true, Dict: true},
	{Name: "full_page_writes", Kind: Bool, Nullable: true},
	{Name: "records", Kind: Int64},
	{Name: "record_bytes", Kind: Int64},
	{Name: "wal_bytes", Kind: Int64},
	{Name: "images", Kind: Int64},
	{Name: "image_bytes", Kind: Int64},
	{Name: "distinct_blocks_imaged", Kind: Int64},
	{Name: "image_bytes_tenth_1", Kind: Int64},
	{Name: "image_bytes_tenth_2", Kind: Int64},
	{Name: "image_bytes_tenth_3", Kind: Int64},
	{Name: "image_bytes_tenth_4", Kind: Int64},
	{Name: "image_bytes_tenth_5", Kind: Int64},
	{Name: "image_bytes_tenth_6", Kind: Int64},
	{Name: "image_bytes_tenth_7", Kind: Int64},
	{Name: "image_bytes_tenth_8", Kind: Int64},
	{Name: "image_bytes_tenth_9", Kind: Int64},
	{Name: "image_bytes_tenth_10", Kind: Int64},
	// why the checkpoint began, as stats --by checkpoint's cause column
	// (analyze.CheckpointCause: time, wal, requested, shutdown,
	// end-of-recovery, backup, unknown); null before the first redo point
	{Name: "cause", Kind: String, Nullable: true, Dict: true},
}}

// TransactionsSchema is the transactions table: one row per transaction end
// (and one per transaction whose end the WAL read does not hold).
var TransactionsSchema = &Schema{Table: TableTransactions, Columns: []Column{
	{Name: "xid", Kind: Int64},
	{Name: "outcome", Kind: String, Dict: true},
	{Name: "prepared", Kind: Bool},
	{Name: "end_lsn", Kind: LSN, Nullable: true},
	{Name: "time", Kind: Time, Nullable: true},
	{Name: "timeline", Kind: Int64, Dict: true},
	{Name: "records", Kind: Int64, Dict: true},
	{Name: "record_bytes", Kind: Int64},
	{Name: "wal_bytes", Kind: Int64},
	{Name: "images", Kind: Int64, Dict: true},
	{Name: "image_bytes", Kind: Int64},
	{Name: "subtransactions", Kind: Int64, Dict: true},
}}

// SegmentsSchema is the segments table: one row per segment file.
var SegmentsSchema = &Schema{Table: TableSegments, Columns: []Column{
	{Name: "segment", Kind: String},
	{Name: "timeline", Kind: Int64, Dict: true},
	{Name: "segno", Kind: Int64, Delta: true},
	{Name: "size", Kind: Int64, Nullable: true},
	{Name: "compressed_size", Kind: Int64, Nullable: true},
	{Name: "compression", Kind: String, Nullable: true, Dict: true},
	{Name: "first_lsn", Kind: LSN, Nullable: true},
	{Name: "last_lsn", Kind: LSN, Nullable: true},
	{Name: "end_lsn", Kind: LSN, Nullable: true},
	{Name: "records", Kind: Int64},
	{Name: "record_bytes", Kind: Int64},
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
