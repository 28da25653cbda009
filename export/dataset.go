package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/walscope/walscope/analyze"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// Partitioning of the output beyond label=…/.
const (
	PartitionNone         = ""
	PartitionSegmentRange = "segment-range"
	PartitionTimeline     = "timeline"
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
	Desc         bool // records.description
	BlockSize    int  // BLCKSZ
	Overwrite    bool
	RowGroupRows int
	// Cycles are the checkpoint cycles from a first pass (Redo points;
	// FindCycles); the first is the WAL before the first redo point.
	Cycles []CycleInfo
}

// ErrExists is returned when a dataset exists and Overwrite is not set.
var ErrExists = errors.New("dataset exists")

// Exporter writes the tables of one stream. Spans of the stream are read
// in parallel, each into a Span (which writes records and blocks into its
// own part files); Merge is then called for each span in WAL order, which
// completes the span's files and carries the tables that need WAL order
// (transactions, checkpoints, segments).
type Exporter struct {
	cfg  Config
	want map[string]bool
	// per-record tests of want, without hashing a table name per record
	wantTx, wantCheckpoints, wantSegments bool
	schemas                               map[string]*Schema
	opts                                  Options
	first                                 xlog.LSN
	haveAny                               bool
	// transactions
	tx      *partWriters
	tops    map[xlog.XID]xlog.XID
	pending map[xlog.XID]*txVol
	// checkpoint cycles
	cycles []*cycleAcc
	merged xlog.LSN
	// segments
	segs map[string]*segAcc
	// closing completes span files in the background (the last row group's
	// compression, the footer, fsync and rename), at most closeAhead at once.
	closing  chan struct{}
	closeWG  sync.WaitGroup
	closeMu  sync.Mutex
	closeErr error
}

const closeAhead = 2

// CycleInfo is a checkpoint cycle's identity.
type CycleInfo struct {
	Redo       xlog.LSN
	Checkpoint xlog.LSN // 0: the WAL before the first redo point
	Time       time.Time
	Online     bool
	FullPage   bool
	WalLevel   xlog.WalLevel // WalLevelUnknown if unknown
}

// New checks the output directory (refusing an existing dataset unless
// cfg.Overwrite, which removes it) and returns an exporter.
func New(cfg Config) (*Exporter, error) {
	e := &Exporter{cfg: cfg, want: map[string]bool{}, schemas: map[string]*Schema{},
		tops: map[xlog.XID]xlog.XID{}, pending: map[xlog.XID]*txVol{}, segs: map[string]*segAcc{},
		closing: make(chan struct{}, closeAhead)}
	if cfg.Format == "" {
		e.cfg.Format = Parquet
	}
	e.opts = Options{RowGroupRows: cfg.RowGroupRows, Metadata: map[string]string{}}
	if cfg.Label != "" {
		e.opts.Metadata["walscope.label"] = cfg.Label
	}
	if len(cfg.Cycles) == 0 {
		e.cfg.Cycles = []CycleInfo{{WalLevel: xlog.WalLevelUnknown}}
	}
	for _, c := range e.cfg.Cycles {
		e.cycles = append(e.cycles, &cycleAcc{info: c, blocks: map[blockKey]struct{}{}})
	}
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
	for _, t := range cfg.Tables {
		dir := e.datasetDir(t)
		ents, err := os.ReadDir(dir)
		if err == nil && len(ents) > 0 {
			if !cfg.Overwrite {
				return nil, fmt.Errorf("%w: %s is not empty", ErrExists, dir)
			}
			if err := os.RemoveAll(dir); err != nil {
				return nil, err
			}
		}
	}
	e.wantTx, e.wantCheckpoints, e.wantSegments = e.want[TableTransactions], e.want[TableCheckpoints], e.want[TableSegments]
	e.tx = e.newPartWriters(TableTransactions)
	return e, nil
}

// datasetDir is the directory this export owns in a table: the one
// Config.Overwrite replaces and whose presence refuses a rerun.
func (e *Exporter) datasetDir(table string) string {
	d := filepath.Join(e.cfg.Dir, table)
	if e.cfg.Label != "" {
		d = filepath.Join(d, "label="+e.cfg.Label)
	}
	if e.cfg.PartitionBy == PartitionSegmentRange {
		d = filepath.Join(d, "segment_range="+e.cfg.SegmentRange)
	}
	return d
}

func (e *Exporter) partDir(table string, tli xlog.TimeLineID) string {
	d := e.datasetDir(table)
	if e.cfg.PartitionBy == PartitionTimeline {
		d = filepath.Join(d, "timeline="+strconv.FormatUint(uint64(tli), 10))
	}
	return d
}

// partWriters are the open files of one table, one per partition.
type partWriters struct {
	e      *Exporter
	table  string
	schema *Schema
	byDir  map[string]RowWriter
	last   RowWriter
	lastT  xlog.TimeLineID
	row    Row
}

func (e *Exporter) newPartWriters(table string) *partWriters {
	if !e.want[table] {
		return nil
	}
	s := e.schemas[table]
	p := &partWriters{e: e, table: table, schema: s, byDir: map[string]RowWriter{}, row: make(Row, len(s.Columns))}
	if e.cfg.Label != "" {
		p.row[len(s.Columns)-1] = Value{S: e.cfg.Label}
	}
	return p
}

// writer returns the file for rows of timeline tli, starting it (named
// after first) if needed.
func (p *partWriters) writer(tli xlog.TimeLineID, first xlog.LSN) (RowWriter, error) {
	if p.last != nil && (p.lastT == tli || p.e.cfg.PartitionBy != PartitionTimeline) {
		return p.last, nil
	}
	dir := p.e.partDir(p.table, tli)
	w := p.byDir[dir]
	if w == nil {
		var err error
		name := fmt.Sprintf("part-%016X%s", uint64(first), p.e.cfg.Format.Ext())
		w, err = Create(filepath.Join(dir, name), p.e.cfg.Format, p.schema, p.e.opts)
		if err != nil {
			return nil, err
		}
		p.byDir[dir] = w
	}
	p.last, p.lastT = w, tli
	return w, nil
}

func (p *partWriters) write(tli xlog.TimeLineID, first xlog.LSN) error {
	w, err := p.writer(tli, first)
	if err != nil {
		return err
	}
	return w.Write(p.row)
}

func (p *partWriters) close() error {
	if p == nil {
		return nil
	}
	var first error
	for _, w := range p.byDir {
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
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

// Span is one span's output: its records and blocks files, and partial
// aggregates merged in WAL order.
type Span struct {
	e       *Exporter
	first   xlog.LSN
	n       int
	records *partWriters
	blocks  *partWriters
	names   nameCache
	desc    []byte
	// transactions
	tops     map[xlog.XID]xlog.XID
	vols     map[xlog.XID]*txVol
	volCache [64]struct {
		xid xlog.XID
		v   *txVol
	}
	ends []txEnd
	// cycles
	cycle  int
	cparts map[int]*cycleAcc
	// segments
	segs    map[string]*segAcc
	lastSeg *segAcc
	segKey  [2]uint64
}

// NewSpan returns an empty span; it is safe to fill spans concurrently.
func (e *Exporter) NewSpan() *Span {
	return &Span{e: e, records: e.newPartWriters(TableRecords), blocks: e.newPartWriters(TableBlocks),
		tops: map[xlog.XID]xlog.XID{}, vols: map[xlog.XID]*txVol{}, cparts: map[int]*cycleAcc{},
		segs: map[string]*segAcc{}, cycle: -1}
}

type nameCache struct {
	version xlog.Version
	types   [256][256]string
	seg     [2]uint64
	segName string
}

func (c *nameCache) recordType(v xlog.Version, id xlog.RmgrID, info uint8) string {
	if v != c.version {
		*c = nameCache{version: v, seg: c.seg, segName: c.segName}
	}
	s := c.types[id][info]
	if s == "" {
		s = string(rmgr.AppendRecordType(nil, v, id, info))
		c.types[id][info] = s
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

var rmgrNames [256]string

func init() {
	for i := range rmgrNames {
		rmgrNames[i] = rmgr.Name(xlog.RmgrID(i))
	}
}

func compressionName(c decode.Compression) string { return c.String() }

// cycleIndex returns the checkpoint cycle holding lsn.
func (e *Exporter) cycleIndex(lsn xlog.LSN, hint int) int {
	cs := e.cycles
	if hint >= 0 && hint < len(cs) && lsn >= cs[hint].info.Redo && (hint+1 == len(cs) || lsn < cs[hint+1].info.Redo) {
		return hint
	}
	i := sort.Search(len(cs), func(i int) bool { return cs[i].info.Redo > lsn }) - 1
	return max(i, 0)
}

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
	segno := uint64(rec.LSN) / uint64(rec.SegSize)
	segName := s.names.segment(rec.TLI, segno, rec.SegSize)
	s.cycle = e.cycleIndex(rec.LSN, s.cycle)
	cyc := e.cycles[s.cycle]
	end, isEnd := rmgr.XactEnd(rec)

	if p := s.records; p != nil {
		r := p.row
		r[RecLSN] = Value{U: uint64(rec.LSN)}
		r[RecEndLSN] = Value{U: uint64(rec.EndLSN)}
		r[RecPrevLSN] = Value{U: uint64(h.Prev)}
		r[RecTimeline] = Value{U: uint64(rec.TLI)}
		r[RecSegment] = Value{S: segName}
		r[RecXID] = Value{U: uint64(h.XID)}
		r[RecToplevelXID] = Value{U: uint64(rec.ToplevelXID)}
		r[RecRmgr] = Value{S: rmgrNames[h.Rmid]}
		r[RecRecordType] = Value{S: s.names.recordType(rec.Version, h.Rmid, h.Info)}
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
		r[RecCheckpointCycle] = Value{U: uint64(cyc.info.Redo)}
		if isEnd {
			r[RecXactTime] = Value{U: uint64(end.Time.UnixMicro())}
		} else {
			r[RecXactTime] = Value{Null: true}
		}
		r[RecPGVersion] = Value{U: uint64(rec.Version)}
		r[RecXlogBlcksz] = Value{U: uint64(rec.PageSize)}
		r[RecSegmentSize] = Value{U: uint64(rec.SegSize)}
		r[RecInfo] = Value{U: uint64(h.Info)}
		if e.cfg.Desc {
			s.desc = rmgr.AppendDesc(s.desc[:0], rec)
			r[recColumns] = Value{S: string(s.desc)}
		}
		if err := p.write(rec.TLI, s.first); err != nil {
			return err
		}
	}
	if p := s.blocks; p != nil {
		r := p.row
		for i := range rec.Blocks {
			b := &rec.Blocks[i]
			r[0] = Value{U: uint64(rec.LSN)}
			r[1] = Value{U: uint64(b.ID)}
			r[2] = Value{U: uint64(b.Rel.SpcOID)}
			r[3] = Value{U: uint64(b.Rel.DBOID)}
			r[4] = Value{U: uint64(b.Rel.RelNumber)}
			r[5] = Value{S: b.Fork().String()} // the number, if it names no fork
			r[6] = Value{U: uint64(b.Block)}
			r[7] = Value{U: uint64(b.DataLen)}
			r[8] = Value{U: b2u(b.HasImage)}
			r[9] = Value{U: uint64(b.ImageLen)}
			r[10] = Value{U: uint64(b.HoleOffset)}
			r[11] = Value{U: uint64(b.HoleLength)}
			r[12] = Value{S: compressionName(b.Compression)}
			r[13] = Value{U: b2u(b.Apply)}
			r[14] = Value{U: b2u(b.WillInit())}
			r[15] = Value{S: rmgrNames[h.Rmid]}
			if err := p.write(rec.TLI, s.first); err != nil {
				return err
			}
		}
	}
	vol := volume{records: 1, recordBytes: uint64(h.TotLen), walBytes: uint64(rec.EndLSN - rec.LSN), images: images, imageBytes: uint64(rec.FPILen)}
	// Transactions: attribute the record to its (top-level) transaction.
	if e.wantTx {
		xid := h.XID
		if rec.ToplevelXID != 0 && xid != 0 {
			s.tops[xid] = rec.ToplevelXID
		}
		// A subtransaction's abort (ROLLBACK TO SAVEPOINT) whose top level
		// the WAL named (wal_level logical) ends no transaction: its WAL is
		// the top level's, which goes on.
		subEnd := false
		if isEnd {
			xid = end.XID
			_, subEnd = analyze.EndOwner(s.tops, &end)
		}
		if len(s.tops) > 0 {
			if top, ok := s.tops[xid]; ok && top != xid {
				xid = top
			}
		}
		if xid != 0 {
			// The transactions open at once are few: a small cache by xid
			// spares most records a lookup in the span's map.
			ce := &s.volCache[xid%xlog.XID(len(s.volCache))]
			v := ce.v
			if v == nil || ce.xid != xid {
				if v = s.vols[xid]; v == nil {
					v = &txVol{}
					s.vols[xid] = v
				}
				ce.xid, ce.v = xid, v
			}
			v.add(vol)
			v.tli = rec.TLI
			if isEnd && !subEnd {
				s.ends = append(s.ends, txEnd{xid: xid, lsn: rec.LSN, tli: rec.TLI, commit: end.Commit, prepared: end.Prepared,
					time: end.Time, subs: append([]xlog.XID(nil), end.Subxacts...)})
			}
		}
	}
	// Checkpoint cycles.
	if e.wantCheckpoints {
		cp := s.cparts[s.cycle]
		if cp == nil {
			cp = &cycleAcc{blocks: map[blockKey]struct{}{}}
			s.cparts[s.cycle] = cp
		}
		cp.add(vol)
		if images > 0 {
			// A cycle's images go to its tenths at once where its end (the
			// next redo point) is known; only the last cycle's wait for the
			// end of the WAL read, so memory does not grow with the archive.
			redo, known := cyc.info.Redo, s.cycle+1 < len(e.cycles)
			for i := range rec.Blocks {
				b := &rec.Blocks[i]
				if !b.HasImage {
					continue
				}
				cp.blocks[blockKey{b.Rel, b.Fork(), b.Block}] = struct{}{}
				if known {
					cp.tenths[tenth(rec.LSN, redo, e.cycles[s.cycle+1].info.Redo)] += uint64(b.ImageLen)
				} else {
					cp.imageLSNs = append(cp.imageLSNs, imageAt{rec.LSN, uint32(b.ImageLen)})
				}
			}
		}
	}
	// Segments.
	if e.wantSegments {
		if s.lastSeg == nil || s.segKey != [2]uint64{uint64(rec.TLI), segno} {
			s.segKey = [2]uint64{uint64(rec.TLI), segno}
			s.lastSeg = s.segs[segName]
			if s.lastSeg == nil {
				s.lastSeg = &segAcc{name: segName, tli: rec.TLI, segno: segno, first: rec.LSN}
				s.segs[segName] = s.lastSeg
			}
		}
		sg := s.lastSeg
		sg.last, sg.end = rec.LSN, rec.EndLSN
		sg.records++
		sg.recordBytes += uint64(h.TotLen)
	}
	return nil
}

// tenth returns which tenth of the cycle from redo to end lsn is in.
func tenth(lsn, redo, end xlog.LSN) int {
	if end <= redo || lsn < redo {
		return 0
	}
	return min(int(uint64(lsn-redo)*10/uint64(end-redo)), 9)
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

type volume struct{ records, recordBytes, walBytes, images, imageBytes uint64 }

func (v *volume) add(o volume) {
	v.records += o.records
	v.recordBytes += o.recordBytes
	v.walBytes += o.walBytes
	v.images += o.images
	v.imageBytes += o.imageBytes
}

type txVol struct {
	volume
	tli xlog.TimeLineID
}

type txEnd struct {
	xid      xlog.XID
	lsn      xlog.LSN
	tli      xlog.TimeLineID
	commit   bool
	prepared bool
	time     time.Time
	subs     []xlog.XID
}

type blockKey struct {
	rel   decode.RelFileLocator
	fork  decode.ForkNumber
	block uint32
}

type imageAt struct {
	lsn xlog.LSN
	len uint32
}

type cycleAcc struct {
	info CycleInfo
	volume
	blocks    map[blockKey]struct{}
	distinct  int
	imageLSNs []imageAt // the last cycle's images, for the tenths once its end is known
	tenths    [10]uint64
	end       xlog.LSN
}

type segAcc struct {
	name                 string
	tli                  xlog.TimeLineID
	segno                uint64
	first, last, end     xlog.LSN
	records, recordBytes uint64
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
	// Checkpoint cycles.
	for i, cp := range s.cparts {
		c := e.cycles[i]
		c.add(cp.volume)
		for k := range cp.blocks {
			c.blocks[k] = struct{}{}
		}
		c.imageLSNs = append(c.imageLSNs, cp.imageLSNs...)
		for k, v := range cp.tenths {
			c.tenths[k] += v
		}
	}
	// Transactions.
	if e.want[TableTransactions] {
		for k, v := range s.tops {
			e.tops[k] = v
		}
		for xid, v := range s.vols {
			if top, ok := e.tops[xid]; ok && top != xid {
				xid = top
			}
			p := e.pending[xid]
			if p == nil {
				p = &txVol{}
				e.pending[xid] = p
			}
			p.add(v.volume)
			p.tli = v.tli
		}
		for _, end := range s.ends {
			if top, ok := e.tops[end.xid]; ok && top != end.xid {
				// the abort of a subtransaction whose top level an earlier
				// span named: its WAL (merged into the top level above) and
				// that of its own subtransactions stay with the top level
				tv := e.pending[top]
				if tv == nil {
					tv = &txVol{}
					e.pending[top] = tv
				}
				for _, sub := range end.subs {
					if sv := e.pending[sub]; sv != nil && sub != top {
						tv.add(sv.volume)
						delete(e.pending, sub)
					}
					e.tops[sub] = top
				}
				continue
			}
			v := e.pending[end.xid]
			if v == nil {
				v = &txVol{}
			}
			delete(e.pending, end.xid)
			for _, sub := range end.subs {
				if sv := e.pending[sub]; sv != nil {
					v.add(sv.volume)
					delete(e.pending, sub)
				}
				delete(e.tops, sub)
			}
			if err := e.writeTx(end.xid, v, &end); err != nil {
				return err
			}
		}
	}
	// Segments.
	for name, sg := range s.segs {
		g := e.segs[name]
		if g == nil {
			e.segs[name] = sg
			continue
		}
		g.last, g.end = sg.last, sg.end
		g.records += sg.records
		g.recordBytes += sg.recordBytes
	}
	return nil
}

func (e *Exporter) writeTx(xid xlog.XID, v *txVol, end *txEnd) error {
	p := e.tx
	if p == nil {
		return nil
	}
	r := p.row
	r[0] = Value{U: uint64(xid)}
	tli := v.tli
	if end != nil {
		outcome := "abort"
		if end.commit {
			outcome = "commit"
		}
		r[1] = Value{S: outcome}
		r[2] = Value{U: b2u(end.prepared)}
		r[3] = Value{U: uint64(end.lsn)}
		r[4] = Value{U: uint64(end.time.UnixMicro())}
		tli = end.tli
		r[11] = Value{U: uint64(len(end.subs))}
	} else {
		r[1] = Value{S: "none"}
		r[2] = Value{}
		r[3] = Value{Null: true}
		r[4] = Value{Null: true}
		r[11] = Value{}
	}
	r[5] = Value{U: uint64(tli)}
	r[6] = Value{U: v.records}
	r[7] = Value{U: v.recordBytes}
	r[8] = Value{U: v.walBytes}
	r[9] = Value{U: v.images}
	r[10] = Value{U: v.imageBytes}
	return p.write(tli, e.first)
}

// Finish writes the tables that need the whole stream (checkpoints,
// segments, the transactions without an end) and completes every file.
// facts (may be nil) gives the segment files' sizes and problems; end is
// where reading stopped.
func (e *Exporter) Finish(facts []archive.FileFact, end xlog.LSN) error {
	e.closeWG.Wait()
	if err := e.closeErrIf(); err != nil {
		e.Abort()
		return err
	}
	// Transactions whose end the WAL read does not hold.
	if e.tx != nil {
		xids := make([]xlog.XID, 0, len(e.pending))
		for x := range e.pending {
			xids = append(xids, x)
		}
		sort.Slice(xids, func(i, j int) bool { return xids[i] < xids[j] })
		for _, x := range xids {
			if err := e.writeTx(x, e.pending[x], nil); err != nil {
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
		for i, c := range e.cycles {
			if c.records == 0 {
				continue
			}
			cEnd := end
			if i+1 < len(e.cycles) {
				cEnd = e.cycles[i+1].info.Redo
			}
			redo := c.info.Redo
			for _, im := range c.imageLSNs {
				if cEnd > redo {
					c.tenths[tenth(im.lsn, redo, cEnd)] += uint64(im.len)
				}
			}
			r := p.row
			r[0] = Value{U: uint64(redo)}
			r[1] = Value{U: uint64(cEnd)}
			if c.info.Checkpoint == 0 {
				r[2], r[3], r[4], r[6] = Value{Null: true}, Value{Null: true}, Value{S: "before first redo"}, Value{Null: true}
			} else {
				kind := "shutdown"
				if c.info.Online {
					kind = "online"
				}
				r[2] = Value{U: uint64(c.info.Checkpoint)}
				r[3] = Value{U: uint64(c.info.Time.UnixMicro())}
				r[4] = Value{S: kind}
				r[6] = Value{U: b2u(c.info.FullPage)}
			}
			if l := c.info.WalLevel; l.Valid() {
				r[5] = Value{S: l.String()}
			} else {
				r[5] = Value{Null: true}
			}
			r[7], r[8], r[9], r[10], r[11] = Value{U: c.records}, Value{U: c.recordBytes}, Value{U: c.walBytes}, Value{U: c.images}, Value{U: c.imageBytes}
			r[12] = Value{U: uint64(len(c.blocks))}
			for k := range 10 {
				r[13+k] = Value{U: c.tenths[k]}
			}
			tli := xlog.TimeLineID(1)
			if e.cfg.PartitionBy == PartitionTimeline {
				tli = e.timelineAt(redo)
			}
			if err := p.write(tli, e.first); err != nil {
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
	var best *segAcc
	for _, s := range e.segs {
		if s.first <= lsn && (best == nil || s.first > best.first) {
			best = s
		}
	}
	if best == nil {
		return 1
	}
	return best.tli
}

func (e *Exporter) writeSegments(p *partWriters, facts []archive.FileFact) error {
	type row struct {
		acc  *segAcc
		fact *archive.FileFact
	}
	rows := map[string]*row{}
	var lo, hi uint64 = ^uint64(0), 0
	for name, s := range e.segs {
		rows[name] = &row{acc: s}
		lo, hi = min(lo, s.segno), max(hi, s.segno)
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
			if len(e.segs) > 0 && (segno < lo || segno > hi) {
				continue // outside the range read
			}
			r = &row{acc: &segAcc{name: name, tli: n.TLI, segno: segno}}
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
		r[0] = Value{S: s.name}
		r[1] = Value{U: uint64(s.tli)}
		r[2] = Value{U: s.segno}
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
			var kinds []string
			for _, pr := range f.Problems {
				kinds = append(kinds, string(pr.Kind))
			}
			if len(kinds) > 0 {
				validation = strings.Join(kinds, ",")
			} else if f.Kind == "partial" {
				validation = "partial"
			}
		}
		if s.records == 0 {
			r[6], r[7], r[8] = Value{Null: true}, Value{Null: true}, Value{Null: true}
			if validation == "ok" {
				validation = "not read"
			}
		} else {
			r[6], r[7], r[8] = Value{U: uint64(s.first)}, Value{U: uint64(s.last)}, Value{U: uint64(s.end)}
		}
		r[9], r[10] = Value{U: s.records}, Value{U: s.recordBytes}
		r[11] = Value{S: validation}
		if err := p.write(s.tli, e.first); err != nil {
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
}

// Want reports whether the table is exported.
func (e *Exporter) Want(table string) bool { return e.want[table] }

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

// FindCycles turns the checkpoint records of a first pass (in WAL order)
// into cycles: the WAL before the first redo point at or after start, then
// one per distinct redo point.
type CycleFinder struct {
	points   []CycleInfo
	walLevel xlog.WalLevel
	haveWL   bool
}

// Add notes a record of the first pass (only XLOG records matter).
func (f *CycleFinder) Add(rec *decode.Record) {
	if p, ok := rmgr.ParameterChange(rec); ok {
		f.walLevel, f.haveWL = p.WalLevel, true
		return
	}
	c, ok := rmgr.Checkpoint(rec)
	if !ok {
		return
	}
	wl := c.WalLevel
	if wl < xlog.WalLevelMinimal && f.haveWL {
		wl = f.walLevel
	}
	f.points = append(f.points, CycleInfo{Redo: c.Redo, Checkpoint: rec.LSN, Time: c.Time, Online: c.Online,
		FullPage: c.FullPageWrites, WalLevel: wl})
}

// Append adds the points another finder found in a later part of the
// stream (the last wal_level it saw carries on into the next part only
// through PARAMETER_CHANGE records it holds).
func (f *CycleFinder) Append(o *CycleFinder) {
	for _, p := range o.points {
		if p.WalLevel < xlog.WalLevelMinimal && f.haveWL {
			p.WalLevel = f.walLevel
		}
		f.points = append(f.points, p)
	}
	if o.haveWL {
		f.walLevel, f.haveWL = o.walLevel, true
	}
}

// Cycles returns the cycles of a stream starting at start.
func (f *CycleFinder) Cycles(start xlog.LSN) []CycleInfo {
	sort.SliceStable(f.points, func(i, j int) bool { return f.points[i].Redo < f.points[j].Redo })
	out := []CycleInfo{{Redo: start, WalLevel: xlog.WalLevelUnknown}}
	for _, p := range f.points {
		if p.Redo < start {
			continue
		}
		if last := &out[len(out)-1]; p.Redo == last.Redo {
			if last.Checkpoint == 0 {
				*last = p
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
