package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// Partitioning of the output beyond label=…/.
const (
	PartitionNone         = ""
	PartitionSegmentRange = "segment-range"
	PartitionTimeline     = "timeline"
	// PartitionBatch is an incremental dataset's (batch.go): a batch=N
	// directory per run of `export --append`, day=YYYY-MM-DD below it.
	PartitionBatch = "batch"
)

// Config describes one export.
type Config struct {
	Dir         string
	Tables      []string // of Tables
	Format      Format
	Label       string // adds a label column and a label=… partition
	PartitionBy string // PartitionNone, PartitionSegmentRange or PartitionTimeline
	// SegmentRange names the job's segment range (first and last segment
	// read) for PartitionSegmentRange.
	SegmentRange string
	// StartLSN and EndLSN bound where the job's records begin, [StartLSN,
	// EndLSN), for PartitionSegmentRange: two jobs cut at a record start
	// share that record's segment (both name it in their ranges) without
	// sharing a record; their markers carry these bounds, and only ranges
	// whose bounds intersect are refused as overlapping (zero: unknown, the
	// segment names decide).
	StartLSN, EndLSN xlog.LSN
	Desc             bool // records.description
	BlockSize        int  // BLCKSZ
	Overwrite        bool
	RowGroupRows     int
	// Cycles are the checkpoint cycles from a first pass
	// (stats.RedoFinder.Cycles); the first is the WAL before the first
	// redo point.
	Cycles []stats.CycleInfo
	// Earlier are the checkpoints before the WAL read, in LSN order (an
	// appended batch's: the RecentCheckpoints of the batch before it),
	// carried on in the batch's RecentCheckpoints.
	Earlier []stats.CycleInfo
	// Catalog and WALNames name the relations of records and blocks, as
	// `stats --by relation` does: the catalog first, then the names the
	// WAL carries (names.LearnNames, a first pass). Either may be nil.
	Catalog  names.Catalog
	WALNames *names.WALNames
	// Batch numbers the batch of a PartitionBatch export (its batch=N
	// directory); LastTime is the last record time of the batches before
	// it, which the records before this batch's first commit take (zero:
	// none, they take the batch's first time).
	Batch    int
	LastTime time.Time
	// Carried names relations and databases as the batches before this
	// one did (after Catalog and WALNames); may be nil.
	Carried *CarriedNames
	// FileRows bounds the rows of one file (0: a span's rows, however
	// many): a file that reaches it is completed and another begun.
	FileRows int64
	// Merge, for a PartitionBatch export, is what the batch may merge its
	// files with (merge.go): the small files of earlier batches, per table
	// and day, merged with the batch's own before publishing. Nil: none.
	Merge *MergeInput
	// Spacing is what an append's checkpoint spacing estimate carries
	// from the batch before (growth_checkpoints.go); nil: nothing.
	Spacing *SpacingCarry
	// Hook, if set, is called at each step of publishing ("staged",
	// "published <table>", ...): tests stop an export there. An error it
	// returns fails the export at that step.
	Hook func(step string) error
}

// ErrExists is returned when a dataset exists and Overwrite is not set.
var ErrExists = errors.New("dataset exists")

// Exporter writes the tables of one stream. Spans of the stream are read
// in parallel, each into a Span (which writes records and blocks into its
// own part files); Merge is then called for each span in WAL order, which
// completes the span's files and carries the tables that need WAL order
// (transactions, checkpoints, segments): analyze's counters do the
// accounting, the exporter turns their results into rows.
type Exporter struct {
	// previous is the batch before's growth aggregate (Config.Spacing), parsed once
	previous previousGrowth
	cfg      Config
	want     map[string]bool
	// per-record tests of want, without hashing a table name per record
	wantTx, wantCheckpoints, wantSegments bool
	schemas                               map[string]*Schema
	opts                                  Options
	first                                 xlog.LSN
	haveAny                               bool
	// transactions: a row per transaction as the merge settles its end
	tx    *partWriters
	xacts *stats.XactCounter
	txErr error
	// checkpoint cycles
	cycles *stats.CycleCounter
	// segments
	segs *stats.SegmentCounter
	// closing completes span files in the background (the last row group's
	// compression, the footer, fsync and rename), at most closeAhead at once.
	closing  chan struct{}
	closeWG  sync.WaitGroup
	closeMu  sync.Mutex
	closeErr error
	// the staging directory the datasets are written into (commit.go),
	// locked while the export lives, and its completed files
	stage     string
	stageLock *os.File
	staged    stagedFiles
	// replaced are the earlier batches' files merged into this batch's
	// (merge.go), relative to the dataset's root
	replaced []string
	// days places rows in day=… partitions (PartitionBatch), and tl
	// keeps the LSN range read on each timeline (batch.go).
	days dayTrack
	tl   tlRanges
	// growth is the batch's growth aggregate (growth.go)
	growth growthTrack
}

const closeAhead = 2

// New checks the output directory (refusing an existing dataset unless
// cfg.Overwrite, and a dataset of an overlapping segment range), makes the
// export's staging directory in it and returns an exporter. Finish
// publishes the datasets, replacing the existing ones with cfg.Overwrite;
// Abort removes the staging directory.
func New(cfg Config) (*Exporter, error) {
	e := &Exporter{cfg: cfg, want: map[string]bool{}, schemas: map[string]*Schema{},
		segs: stats.NewSegmentCounter(), closing: make(chan struct{}, closeAhead)}
	if cfg.Format == "" {
		e.cfg.Format = Parquet
	}
	e.opts = Options{RowGroupRows: cfg.RowGroupRows, Metadata: map[string]string{}}
	if cfg.Label != "" {
		e.opts.Metadata["walscope.label"] = cfg.Label
	}
	// The end of the last cycle is where this reading ends (Finish).
	e.cycles = stats.NewCycleCounter(cfg.Cycles, 0, true)
	e.xacts = stats.NewXactCounter(func(x *stats.XidVolume) {
		if e.txErr == nil {
			e.txErr = e.writeTx(x)
		}
	})
	for _, t := range cfg.Tables {
		s := SchemaOf(t)
		if s == nil {
			return nil, fmt.Errorf("unknown table %q (tables: %s)", t, strings.Join(Tables, ", "))
		}
		if t == TableRecords && cfg.Desc {
			s = s.With(DescriptionColumn)
		}
		if cfg.Label != "" {
			s = s.With(LabelColumn)
		}
		e.want[t], e.schemas[t] = true, s
	}
	e.days.start(cfg.LastTime)
	if cfg.Spacing != nil {
		e.previous = parsePrevious(cfg.Spacing.Previous)
		if e.previous.err == nil {
			e.growth.cells.settings.carryCreated(e.previous.Settings)
		}
	}
	if err := e.startStaging(); err != nil {
		return nil, err
	}
	e.wantTx, e.wantCheckpoints, e.wantSegments = e.want[TableTransactions], e.want[TableCheckpoints], e.want[TableSegments]
	e.tx = e.newPartWriters(TableTransactions)
	return e, nil
}

// datasetDir is where this export writes a table's dataset: in its staging
// directory, until Finish publishes it to finalDir (commit.go).
func (e *Exporter) datasetDir(table string) string {
	return filepath.Join(e.stage, e.datasetRel(table))
}

func (e *Exporter) partDir(table string, tli xlog.TimeLineID, day string) string {
	d := e.datasetDir(table)
	switch e.cfg.PartitionBy {
	case PartitionTimeline:
		d = filepath.Join(d, "timeline="+strconv.FormatUint(uint64(tli), 10))
	case PartitionBatch:
		d = filepath.Join(d, dayDir(day))
	}
	return d
}

// partWriters are the open files of one table, one per partition.
type partWriters struct {
	e      *Exporter
	table  string
	schema *Schema
	byDir  map[string]RowWriter
	paths  map[string]string // by directory, the file's path
	last   RowWriter
	lastT  xlog.TimeLineID
	lastD  string
	row    Row
}

func (e *Exporter) newPartWriters(table string) *partWriters {
	if !e.want[table] {
		return nil
	}
	s := e.schemas[table]
	p := &partWriters{e: e, table: table, schema: s, byDir: map[string]RowWriter{}, paths: map[string]string{}, row: make(Row, len(s.Columns))}
	if e.cfg.Label != "" {
		p.row[len(s.Columns)-1] = Value{S: e.cfg.Label}
	}
	return p
}

// writer returns the file for rows of timeline tli and day, starting it
// (named after first) if needed.
func (p *partWriters) writer(tli xlog.TimeLineID, day string, first xlog.LSN) (RowWriter, error) {
	if p.last != nil && (p.lastT == tli || p.e.cfg.PartitionBy != PartitionTimeline) && p.lastD == day &&
		(p.e.cfg.FileRows <= 0 || p.last.Rows() < p.e.cfg.FileRows) {
		return p.last, nil
	}
	dir := p.e.partDir(p.table, tli, day)
	w := p.byDir[dir]
	if w != nil && p.e.cfg.FileRows > 0 && w.Rows() >= p.e.cfg.FileRows {
		// Full: completed now, another file begun (named after its first row).
		if err := p.closeOne(dir); err != nil {
			return nil, err
		}
		w = nil
	}
	if w == nil {
		var err error
		name := fmt.Sprintf("part-%016X%s", uint64(first), p.e.cfg.Format.Ext())
		w, err = Create(filepath.Join(dir, name), p.e.cfg.Format, p.schema, p.e.opts)
		if err != nil {
			return nil, err
		}
		p.byDir[dir] = w
		p.paths[dir] = filepath.Join(dir, name)
	}
	p.last, p.lastT, p.lastD = w, tli, day
	return w, nil
}

func (p *partWriters) write(tli xlog.TimeLineID, first xlog.LSN) error {
	return p.writeDay(tli, "", first)
}

// writeDay writes the row into the partition of day (PartitionBatch).
func (p *partWriters) writeDay(tli xlog.TimeLineID, day string, first xlog.LSN) error {
	w, err := p.writer(tli, day, first)
	if err != nil {
		return err
	}
	return w.Write(p.row)
}

// closeOne completes the file of directory dir.
func (p *partWriters) closeOne(dir string) error {
	w := p.byDir[dir]
	delete(p.byDir, dir)
	if p.last == w {
		p.last = nil
	}
	rows := w.Rows()
	if err := w.Close(); err != nil {
		return err
	}
	rel, _ := filepath.Rel(p.e.datasetDir(p.table), p.paths[dir])
	p.e.staged.add(p.table, rel, rows)
	return nil
}

func (p *partWriters) close() error {
	if p == nil {
		return nil
	}
	var first error
	for dir, w := range p.byDir {
		rows := w.Rows()
		if err := w.Close(); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		// for the dataset's completion marker
		rel, _ := filepath.Rel(p.e.datasetDir(p.table), p.paths[dir])
		p.e.staged.add(p.table, rel, rows)
	}
	p.byDir, p.last = map[string]RowWriter{}, nil
	return first
}

func (p *partWriters) abort() {
	if p == nil {
		return
	}
	for _, w := range p.byDir {
		w.Abort()
	}
	p.byDir, p.last = map[string]RowWriter{}, nil
}

// Span is one span's output: its records and blocks files, and the parts
// of analyze's counters, merged in WAL order.
type Span struct {
	e       *Exporter
	first   xlog.LSN
	n       int
	records *partWriters
	blocks  *partWriters
	names   nameCache
	rels    relCache
	desc    []byte
	clock   spanClock
	growth  growthCells
	sizer   growthSizer
	tl      tlRanges
	xacts   *stats.XactCounter
	cycles  *stats.CycleCounter
	segs    *stats.SegmentCounter
}

// NewSpan returns an empty span; it is safe to fill spans concurrently.
func (e *Exporter) NewSpan() *Span {
	return &Span{e: e, records: e.newPartWriters(TableRecords), blocks: e.newPartWriters(TableBlocks),
		xacts: e.xacts.NewPart(), cycles: e.cycles.NewPart(), segs: stats.NewSegmentCounter()}
}

// nameCache holds a span's names of resource managers, record types and
// segments, looked up on first use: a resource manager registered after
// the span began (rmgr.Register) is looked up again.
type nameCache struct {
	version xlog.Version
	rmgrs   [256]rmgrNames
	seg     [2]uint64
	segName string
}

// rmgrNames are the names of a resource manager and of its record types.
type rmgrNames struct {
	m     *rmgr.Manager // as registered when name was looked up
	name  string
	types [256]string // by xl_info, of the cache's version
}

// rmgr returns the names of resource manager id for WAL of version v.
func (c *nameCache) rmgr(v xlog.Version, id xlog.RmgrID) *rmgrNames {
	if v != c.version {
		c.version = v
		for i := range c.rmgrs {
			c.rmgrs[i].types = [256]string{}
		}
	}
	n := &c.rmgrs[id]
	if m := rmgr.Lookup(id); n.name == "" || n.m != m {
		*n = rmgrNames{m: m, name: rmgr.Name(id)}
	}
	return n
}

// recordType returns pg_waldump's name of the record type (rmgr's id, info).
func (n *rmgrNames) recordType(v xlog.Version, id xlog.RmgrID, info uint8) string {
	s := n.types[info]
	if s == "" {
		s = string(rmgr.AppendRecordType(nil, v, id, info))
		n.types[info] = s
	}
	return s
}

func (c *nameCache) segment(tli xlog.TimeLineID, segno uint64, segSize uint32) string {
	if c.segName == "" || c.seg != [2]uint64{uint64(tli), segno} {
		c.seg = [2]uint64{uint64(tli), segno}
		c.segName = xlog.NewSegmentName(tli, segno, segSize).String()
	}
	return c.segName
}

func compressionName(c decode.Compression) string { return c.String() }

// Add exports one record.
func (s *Span) Add(dec *decode.Decoder, rec *decode.Record) error {
	e := s.e
	if s.n == 0 {
		s.first = rec.LSN
	}
	s.n++
	h := &rec.Header
	var images, imgRaw uint64
	comp := decode.CompressNone
	mixed := false
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if b.HasImage {
			if images > 0 && b.Compression != comp {
				mixed = true
			}
			images++
			comp = b.Compression
			imgRaw += uint64(e.blockSize() - int(b.HoleLength))
		}
	}
	names := s.names.rmgr(rec.Version, h.Rmid)
	end, isEnd := rmgr.XactEnd(rec)
	s.tl.add(rec.TLI, rec.LSN, rec.EndLSN)
	// The day partition (PartitionBatch): of the last commit's time.
	var day string
	nameAt := s.first
	if e.cfg.PartitionBy == PartitionBatch {
		if isEnd {
			s.clock.see(rec.LSN, end.Time)
		}
		day, nameAt = s.clock.dayDir(s.first), rec.LSN
		s.addGrowth(dec, rec, images, imgRaw)
	}

	if p := s.records; p != nil {
		r := p.row
		r[RecLSN] = Value{U: uint64(rec.LSN)}
		r[RecEndLSN] = Value{U: uint64(rec.EndLSN)}
		r[RecPrevLSN] = Value{U: uint64(h.Prev)}
		r[RecTimeline] = Value{U: uint64(rec.TLI)}
		r[RecSegment] = Value{S: s.names.segment(rec.TLI, uint64(rec.LSN)/uint64(rec.SegSize), rec.SegSize)}
		r[RecXID] = Value{U: uint64(h.XID)}
		r[RecToplevelXID] = Value{U: uint64(rec.ToplevelXID)}
		r[RecRmgr] = Value{S: names.name}
		r[RecRecordType] = Value{S: names.recordType(rec.Version, h.Rmid, h.Info)}
		r[RecTotalLength] = Value{U: uint64(h.TotLen)}
		r[RecMainDataLength] = Value{U: uint64(len(rec.MainData))}
		r[RecBlockCount] = Value{U: uint64(len(rec.Blocks))}
		r[RecImageCount] = Value{U: images}
		r[RecImageBytes] = Value{U: uint64(rec.FPILen)}
		r[RecImageBytesUncompressed] = Value{U: imgRaw}
		cs := compressionName(comp)
		if mixed {
			cs = "mixed"
		}
		r[RecCompression] = Value{S: cs}
		r[RecCheckpointCycle] = Value{U: uint64(s.cycles.Redo(s.cycles.Index(rec.LSN)))}
		if isEnd {
			r[RecXactTime] = Value{U: uint64(end.Time.UnixMicro())}
		} else {
			r[RecXactTime] = Value{Null: true}
		}
		r[RecPGVersion] = Value{U: uint64(rec.Version)}
		r[RecXlogBlcksz] = Value{U: uint64(rec.PageSize)}
		r[RecSegmentSize] = Value{U: uint64(rec.SegSize)}
		r[RecInfo] = Value{U: uint64(h.Info)}
		if len(rec.Blocks) > 0 {
			// the relation `stats --by relation` counts the record for
			loc := rec.Blocks[0].Rel
			r[RecTablespace] = Value{U: uint64(loc.SpcOID)}
			r[RecDatabase] = Value{U: uint64(loc.DBOID)}
			r[RecRelfilenode] = Value{U: uint64(loc.RelNumber)}
			n := s.rels.lookup(e, loc)
			r[RecDatabaseName] = n.db
			n.fill(r[RecSchemaName:])
		} else {
			for i := RecTablespace; i <= RecRelkind; i++ {
				r[i] = Value{Null: true}
			}
		}
		if e.cfg.Desc {
			s.desc = rmgr.AppendDesc(s.desc[:0], rec)
			r[recColumns] = Value{S: string(s.desc)}
		}
		if err := p.writeDay(rec.TLI, day, nameAt); err != nil {
			return err
		}
	}
	if p := s.blocks; p != nil {
		r := p.row
		for i := range rec.Blocks {
			b := &rec.Blocks[i]
			r[BlkLSN] = Value{U: uint64(rec.LSN)}
			r[BlkBlockID] = Value{U: uint64(b.ID)}
			r[BlkTablespace] = Value{U: uint64(b.Rel.SpcOID)}
			r[BlkDatabase] = Value{U: uint64(b.Rel.DBOID)}
			r[BlkRelfilenode] = Value{U: uint64(b.Rel.RelNumber)}
			r[BlkFork] = Value{S: b.Fork().String()} // the number, if it names no fork
			r[BlkBlock] = Value{U: uint64(b.Block)}
			r[BlkDataLength] = Value{U: uint64(b.DataLen)}
			r[BlkHasImage] = Value{U: b2u(b.HasImage)}
			r[BlkImageLength] = Value{U: uint64(b.ImageLen)}
			r[BlkHoleOffset] = Value{U: uint64(b.HoleOffset)}
			r[BlkHoleLength] = Value{U: uint64(b.HoleLength)}
			r[BlkCompression] = Value{S: compressionName(b.Compression)}
			r[BlkApplyImage] = Value{U: b2u(b.Apply)}
			r[BlkWillInit] = Value{U: b2u(b.WillInit())}
			r[BlkRmgr] = Value{S: names.name}
			n := s.rels.lookup(e, b.Rel)
			r[BlkDatabaseName] = n.db
			n.fill(r[BlkSchemaName:])
			if err := p.writeDay(rec.TLI, day, nameAt); err != nil {
				return err
			}
		}
	}
	if e.wantTx {
		var endp *rmgr.XactEndInfo
		if isEnd {
			endp = &end
		}
		s.xacts.Add(rec, images, endp)
	}
	if e.wantCheckpoints {
		s.cycles.Add(rec, images)
	}
	if e.wantSegments {
		s.segs.Add(rec, images)
	}
	return nil
}

// relName is what the catalog or the WAL says of a relation file, and of
// its database.
type relName struct {
	schema, name, kind, db Value
}

// fill sets the schema_name, relation_name and relkind cells.
func (n *relName) fill(r Row) {
	r[0], r[1], r[2] = n.schema, n.name, n.kind
}

// relCache is a span's names of relation files, looked up once per file.
type relCache struct {
	last   decode.RelFileLocator
	lastN  *relName
	byFile map[decode.RelFileLocator]*relName
}

func (c *relCache) lookup(e *Exporter, loc decode.RelFileLocator) *relName {
	if c.lastN != nil && c.last == loc {
		return c.lastN
	}
	n := c.byFile[loc]
	if n == nil {
		n = e.relation(loc)
		if c.byFile == nil {
			c.byFile = map[decode.RelFileLocator]*relName{}
		}
		c.byFile[loc] = n
	}
	c.last, c.lastN = loc, n
	return n
}

var nullName = Value{Null: true}

// relation names a relation file: from the catalog (schema.name), else
// from the WAL (with its relkind); nulls where neither knows it.
func (e *Exporter) relation(loc decode.RelFileLocator) *relName {
	n := &relName{nullName, nullName, nullName, e.databaseName(loc.DBOID)}
	if q := e.cfg.Catalog.Name(loc); q != "" {
		if sch, rel, ok := strings.Cut(q, "."); ok {
			n.schema, n.name = Value{S: sch}, Value{S: rel}
		} else {
			n.name = Value{S: q}
		}
		return n
	}
	x, ok := e.cfg.WALNames.Lookup(loc)
	if c, carried := e.cfg.Carried.rel(loc); carried && (!ok || x.Transient) {
		// Named by an earlier batch: a rewrite's transient name
		// (names.WALRel.Transient) never replaces another name, in one
		// batch or across batches.
		n.schema, n.name, n.kind = optValue(c.Schema), optValue(c.Name), optValue(c.Kind)
		return n
	}
	if !ok {
		return n
	}
	n.name = Value{S: x.Name}
	if x.DB == 0 {
		n.schema = Value{S: "pg_catalog"} // shared catalogs
	} else if sch, ok := e.cfg.WALNames.NamespaceName(x.DB, x.NamespaceOID); ok {
		n.schema = Value{S: sch}
	}
	if x.Kind != 0 {
		n.kind = Value{S: string(rune(x.Kind))}
	}
	return n
}

// databaseName names database oid: from the catalog, else from the WAL;
// null for shared relations (0) and where neither knows it.
func (e *Exporter) databaseName(oid uint32) Value {
	if oid == 0 {
		return nullName
	}
	if s := e.cfg.Catalog.DatabaseName(oid); s != "" {
		return Value{S: s}
	}
	if s, ok := e.cfg.WALNames.DatabaseName(oid); ok {
		return Value{S: s}
	}
	if s, ok := e.cfg.Carried.db(oid); ok {
		return Value{S: s}
	}
	return nullName
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (e *Exporter) blockSize() int {
	if e.cfg.BlockSize > 0 {
		return e.cfg.BlockSize
	}
	return 8192
}

// Abort removes the span's unfinished files.
func (s *Span) Abort() {
	s.records.abort()
	s.blocks.abort()
}

// Merge completes a span's files and merges its aggregates; call it for
// each span in WAL order.
func (e *Exporter) Merge(s *Span) error {
	if err := e.closeErrIf(); err != nil {
		s.Abort()
		return err
	}
	e.closing <- struct{}{}
	e.closeWG.Add(1)
	go func() {
		defer func() { <-e.closing; e.closeWG.Done() }()
		err := s.records.close()
		if err != nil {
			s.blocks.abort()
		} else {
			err = s.blocks.close()
		}
		if err != nil {
			e.closeMu.Lock()
			if e.closeErr == nil {
				e.closeErr = err
			}
			e.closeMu.Unlock()
		}
	}()
	if s.n == 0 {
		return nil
	}
	if !e.haveAny {
		e.first, e.haveAny = s.first, true
	}
	if e.cfg.PartitionBy == PartitionBatch {
		e.mergeGrowth(s, e.days.lastTime)
	}
	e.days.merge(s)
	e.tl.merge(&s.tl)
	e.cycles.Merge(s.cycles)
	e.segs.Merge(s.segs)
	if e.wantTx {
		// (writes a row per transaction whose end the merge settles)
		e.xacts.Merge(s.xacts)
		return e.txErr
	}
	return nil
}

// writeTx writes a transaction's row: at its end, or at Finish for one whose
// end was not read.
func (e *Exporter) writeTx(x *stats.XidVolume) error {
	p := e.tx
	if p == nil {
		return nil
	}
	r := p.row
	r[0] = Value{U: uint64(x.XID)}
	if x.Ended {
		outcome := "abort"
		if x.Commit {
			outcome = "commit"
		}
		r[1] = Value{S: outcome}
		r[2] = Value{U: b2u(x.Prepared)}
		r[3] = Value{U: uint64(x.EndLSN)}
		r[4] = Value{U: uint64(x.Time.UnixMicro())}
		r[11] = Value{U: uint64(x.Subxacts)}
	} else {
		r[1] = Value{S: "none"}
		r[2] = Value{}
		r[3] = Value{Null: true}
		r[4] = Value{Null: true}
		r[11] = Value{}
	}
	r[5] = Value{U: uint64(x.TLI)}
	r[6] = Value{U: x.Records}
	r[7] = Value{U: x.RecordBytes}
	r[8] = Value{U: x.WALBytes}
	r[9] = Value{U: x.Images}
	r[10] = Value{U: x.ImageBytes}
	day := ""
	if e.cfg.PartitionBy == PartitionBatch {
		if x.Ended {
			day = dayOf(x.Time)
		} else {
			day = e.days.current()
		}
	}
	return p.writeDay(x.TLI, day, e.first)
}

// Finish writes the tables that need the whole stream (checkpoints,
// segments, the transactions without an end) and completes every file.
// facts (may be nil) gives the segment files' sizes and problems; end is
// where reading stopped.
func (e *Exporter) Finish(facts []archive.FileFact, end xlog.LSN) (err error) {
	defer func() {
		if err != nil {
			e.Abort()
			return
		}
		// Every file complete: the datasets are published (or none is).
		if e.cfg.PartitionBy == PartitionBatch {
			if err = e.placePending(); err == nil {
				err = e.mergeStaged()
			}
			if err != nil {
				e.Abort()
				return
			}
		}
		if err = e.hook("staged"); err != nil {
			e.Abort()
			return
		}
		err = e.publish()
		e.dropStaging()
	}()
	e.closeWG.Wait()
	if err := e.closeErrIf(); err != nil {
		e.Abort()
		return err
	}
	// Transactions whose end the WAL read does not hold.
	if e.tx != nil {
		for _, x := range e.xacts.Open() {
			if err := e.writeTx(x); err != nil {
				e.Abort()
				return err
			}
		}
		if err := e.tx.close(); err != nil {
			e.Abort()
			return err
		}
	}
	if p := e.newPartWriters(TableCheckpoints); p != nil {
		for _, c := range e.cycles.Finish(end) {
			redo := c.Redo
			r := p.row
			r[0] = Value{U: uint64(redo)}
			r[1] = Value{U: uint64(c.End)}
			if c.Checkpoint == 0 {
				r[2], r[3], r[4], r[6] = Value{Null: true}, Value{Null: true}, Value{S: "before first redo"}, Value{Null: true}
			} else {
				kind := "shutdown"
				if c.Online {
					kind = "online"
				}
				r[2] = Value{U: uint64(c.Checkpoint)}
				r[3] = Value{U: uint64(c.Time.UnixMicro())}
				r[4] = Value{S: kind}
				r[6] = Value{U: b2u(c.FullPage)}
			}
			if l := c.WalLevel; l.Valid() {
				r[5] = Value{S: l.String()}
			} else {
				r[5] = Value{Null: true}
			}
			r[7], r[8], r[9], r[10], r[11] = Value{U: c.Records}, Value{U: c.RecordBytes}, Value{U: c.WALBytes}, Value{U: c.Images}, Value{U: c.ImageBytes}
			r[12] = Value{U: uint64(c.DistinctBlocks)}
			for k := range 10 {
				r[13+k] = Value{U: c.Tenths[k]}
			}
			if c.Checkpoint == 0 {
				r[23] = Value{Null: true}
			} else {
				r[23] = Value{S: c.Cause.String()}
			}
			tli := xlog.TimeLineID(1)
			if e.cfg.PartitionBy == PartitionTimeline {
				tli = e.timelineAt(redo)
			}
			day := ""
			if e.cfg.PartitionBy == PartitionBatch {
				// by its checkpoint's time; the WAL before the first redo
				// point by its records' time
				day = e.days.at(redo)
				if c.Checkpoint != 0 {
					day = dayOf(c.Time)
					e.addGrowthCheckpoint(redo, day, valueText(r[4]), valueText(r[23]))
				}
			}
			if err := p.writeDay(tli, day, e.first); err != nil {
				p.abort()
				return err
			}
		}
		if err := p.close(); err != nil {
			return err
		}
	}
	if p := e.newPartWriters(TableSegments); p != nil {
		if err := e.writeSegments(p, facts); err != nil {
			p.abort()
			return err
		}
		if err := p.close(); err != nil {
			return err
		}
	}
	return nil
}

// timelineAt returns the timeline of the segment holding lsn, as read.
func (e *Exporter) timelineAt(lsn xlog.LSN) xlog.TimeLineID {
	var best *stats.SegmentVolume
	for _, s := range e.segs.Segments {
		if s.First <= lsn && (best == nil || s.First > best.First) {
			best = s
		}
	}
	if best == nil {
		return 1
	}
	return best.TLI
}

func (e *Exporter) writeSegments(p *partWriters, facts []archive.FileFact) error {
	type row struct {
		acc  *stats.SegmentVolume
		fact *archive.FileFact
	}
	rows := map[string]*row{}
	var lo, hi uint64 = ^uint64(0), 0
	for name, s := range e.segs.Segments {
		rows[name] = &row{acc: s}
		lo, hi = min(lo, s.Segno), max(hi, s.Segno)
	}
	for i := range facts {
		f := &facts[i]
		if f.Kind == "history" {
			continue
		}
		name := strings.TrimSuffix(f.Name, ".partial")
		n, _, err := xlog.ParseSegmentName(name)
		if err != nil {
			continue
		}
		segSize := f.SegmentSize
		if segSize == 0 {
			continue
		}
		segno := uint64(n.Log)*(0x100000000/uint64(segSize)) + uint64(n.Seg)
		r := rows[name]
		if r == nil {
			if len(e.segs.Segments) > 0 && (segno < lo || segno > hi) {
				continue // outside the range read
			}
			r = &row{acc: &stats.SegmentVolume{Name: name, TLI: n.TLI, Segno: segno}}
			rows[name] = r
		}
		if r.fact == nil || f.Kind == "segment" {
			r.fact = f
		}
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rw := rows[n]
		s := rw.acc
		r := p.row
		r[0] = Value{S: s.Name}
		r[1] = Value{U: uint64(s.TLI)}
		r[2] = Value{U: s.Segno}
		r[3], r[4], r[5] = Value{Null: true}, Value{Null: true}, Value{Null: true}
		validation := "ok"
		if f := rw.fact; f != nil {
			if f.Size >= 0 {
				r[3] = Value{U: uint64(f.Size)}
			}
			r[4] = Value{U: uint64(f.StoredSize)}
			if f.Compression != "" {
				r[5] = Value{S: string(f.Compression)}
			}
			// The problems' classes, as ls and verify name them.
			var classes []string
			for _, pr := range f.Problems {
				if c := pr.Kind.Class(); !slices.Contains(classes, c) {
					classes = append(classes, c)
				}
			}
			if len(classes) > 0 {
				validation = strings.Join(classes, ",")
			} else if f.Kind == "partial" {
				validation = "partial"
			}
		}
		if s.Records == 0 {
			r[6], r[7], r[8] = Value{Null: true}, Value{Null: true}, Value{Null: true}
			if validation == "ok" {
				validation = "not read"
			}
		} else {
			r[6], r[7], r[8] = Value{U: uint64(s.First)}, Value{U: uint64(s.Last)}, Value{U: uint64(s.End)}
		}
		r[9], r[10] = Value{U: s.Records}, Value{U: s.RecordBytes}
		r[11] = Value{S: validation}
		day := ""
		if e.cfg.PartitionBy == PartitionBatch {
			day = e.days.at(s.First)
			size := int64(-1)
			if !r[3].Null {
				size = int64(r[3].U)
			}
			e.addGrowthSegment(s.Name, day, size)
		}
		if err := p.writeDay(s.TLI, day, e.first); err != nil {
			return err
		}
	}
	return nil
}

func (e *Exporter) closeErrIf() error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	return e.closeErr
}

// Abort waits for the spans being completed and removes the unfinished
// files of the tables written at the end.
func (e *Exporter) Abort() {
	e.closeWG.Wait()
	e.tx.abort()
	e.dropStaging()
}

// Want reports whether the table is exported.
func (e *Exporter) Want(table string) bool { return e.want[table] }

// NeedsNames reports whether the export names relations (Catalog,
// WALNames): records and blocks do.
func (c *Config) NeedsNames() bool {
	for _, t := range c.Tables {
		if t == TableRecords || t == TableBlocks {
			return true
		}
	}
	return false
}

// NeedsCycles reports whether the export needs the checkpoint cycles (a
// first pass over the checkpoint records).
func (c *Config) NeedsCycles() bool {
	for _, t := range c.Tables {
		if t == TableRecords || t == TableCheckpoints {
			return true
		}
	}
	return false
}
