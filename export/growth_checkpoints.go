package export

import (
	"bytes"
	"cmp"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
)

// The growth aggregate's checkpoint spacing estimate (issue 29: "what the
// what-if settings would have saved"): what max_wal_size twice and four
// times and checkpoint_timeout twice (whatif.SpacingScenarios, relative to
// the settings the stream had: given, else inferred from its recent
// checkpoints) would have saved in record bytes, per day, as `walscope
// whatif`'s checkpoint settings scenarios estimate it: a simulated
// checkpointer per scenario on the scenario's own WAL, and a full-page
// image at the first change of a block in each simulated cycle.
//
// Order: the simulation needs the records in WAL order, while an append
// reads parallel spans. A span keeps of each record only what the
// simulation reads (whatif.SpacingRecord: LSN, lengths, time, block keys
// and image flags: about 100 bytes a record, freed at its merge), and the
// merge, which is in WAL order, replays the span's records through one
// whatif.Spacing. So the estimate does not depend on how the batch was cut
// into spans.
//
// Nights: a checkpoint cycle spans batches. Each batch's aggregate carries
// the simulation's state at its end (SpacingState: each scenario's
// checkpointer and insert position, the running mean image, and the
// blocks seen with the simulated cycle each last changed in; encoded,
// compressed), which the next append resumes from (Config.Spacing). Every
// block seen is carried up to MaxSpacingBlocks; beyond, only those
// changed in a scenario's current cycle (whatif.Spacing.State's bound).
//
// The one thing of whatif's estimate that needs the whole period is the
// mean data length a block whose image a scenario drops is given
// (whatif.DataLenLearner over the stream): as for full_page_writes = off
// (growth_settings.go), each day keeps the count of such blocks per key,
// and the reader gives them the period's means (GrowthSettings.DataLen).
// The simulated positions, which decide where WAL-triggered checkpoints
// fall, use the means of the batches before (carried): the one
// difference from whatif over the whole stream, which knows the whole
// stream's means from its first pass.

// GrowthSpacingVersion is the version of the checkpoint spacing estimate
// (Growth.Spacing) this walscope writes and reads; a manifest without it
// has none, which the reader says.
const GrowthSpacingVersion = 1

// MaxSpacingBlocks bounds the blocks a batch carries to the next in its
// spacing state (every block seen up to it; beyond, those of the
// scenarios' current cycles).
const MaxSpacingBlocks = 1 << 20

// SpacingCarry is what an append gives the spacing estimate: the
// checkpoint settings the server had where the flags give them, and the
// growth aggregate of the batch before (its Growth JSON; nil: the first).
type SpacingCarry struct {
	Given    whatif.GivenSettings
	Previous json.RawMessage
	// State is the content of the state file Previous names
	// (GrowthSpacing.StateFile; nil: none, or it could not be read).
	State []byte
}

// GrowthSpacing is a batch's checkpoint spacing estimate.
type GrowthSpacing struct {
	Version int `json:"spacing_version"`
	// Current are the settings the batch took the stream to have, and
	// Assumed those of them neither given nor shown by its checkpoints.
	MaxWALSize        string   `json:"max_wal_size"`
	CheckpointTimeout string   `json:"checkpoint_timeout"`
	Assumed           []string `json:"assumed,omitempty"`
	// Scenarios are the scenarios' names and settings, in the order of
	// the days' rows.
	Scenarios []GrowthSpacingScenario `json:"scenarios"`
	Days      []GrowthSpacingDay      `json:"days"`
	// StateFile names the file beside the manifest holding the
	// simulation's state at the batch's end (spacingState, deflated:
	// SpacingStateName), StateCRC32C its CRC-32C (8 hex digits) and
	// StateBytes its size: the next batch resumes from it. Kept out of
	// the manifest, which every append and growth read, where it could
	// weigh megabytes a night (BenchmarkSpacingState). State is the same,
	// in base64, inline: how a walscope before wrote it (read still).
	StateFile   string `json:"state_file,omitempty"`
	StateCRC32C string `json:"state_crc32c,omitempty"`
	StateBytes  int    `json:"state_bytes,omitempty"`
	State       string `json:"state,omitempty"`
	// StateBlocks are the blocks State carries, DroppedBlocks those seen
	// and left out of it (MaxSpacingBlocks; since the dataset's first
	// batch).
	StateBlocks   int `json:"state_blocks"`
	DroppedBlocks int `json:"dropped_blocks,omitempty"`
}

// GrowthSpacingScenario names a scenario and its settings.
type GrowthSpacingScenario struct {
	Name              string `json:"name"`
	MaxWALSize        string `json:"max_wal_size"`
	CheckpointTimeout string `json:"checkpoint_timeout"`
}

// GrowthSpacingDay is a day of the batch: its records' bytes, and per
// scenario (in GrowthSpacing.Scenarios' order) the bytes saved before the
// data lengths (Saved: the records' bytes less the scenario's, without
// the mean data given to blocks whose image it dropped), those blocks by
// key (NoData: rows of [rmgr id, record type, block id, count]), and the
// checkpoints it began that day.
type GrowthSpacingDay struct {
	Day         string        `json:"day"`
	Bytes       uint64        `json:"record_bytes"`
	Saved       []int64       `json:"saved"`
	Checkpoints []int         `json:"checkpoints"`
	NoData      [][][4]uint64 `json:"no_data"`
}

// spacingState is the carried state: the simulation's, and the data
// lengths learnt by the batches so far ([rmgr id, record type, block id,
// count, sum], as GrowthSettings.DataLen) for the positions' means.
type spacingState struct {
	whatif.SpacingState
	DataLen [][5]uint64 `json:"data_len"`
	NBlocks int         `json:"blocks"` // SpacingState.Blocks, after the JSON (encodeTouches)
}

// spacingSpan is a span's records as the simulation reads them, encoded
// in a byte stream of varints (addSpacing), and the hour each run of
// records falls in. A whatif.SpacingRecord kept per record (its time and
// block slice included) made the append 28% dearer in CPU on
// bench-append's dated archive, most of it growing that slice; records and
// blocks of fixed size in pooled chunks (24 and 16 bytes) 14%; the stream
// is read back once, in order.
type spacingSpan struct {
	buf   []byte
	n     int      // records
	first xlog.LSN // the first record's
	last  xlog.LSN // the last record's
	us    int64    // the last time told, in microseconds since the Unix epoch
	// rels are the relation forks of blocks, relIndex their indexes;
	// recent caches the last ones looked up (idx+1; 0: none)
	rels       []stats.RelKey
	relIndex   map[stats.RelKey]uint32
	recent     [8]recentRel
	nextRecent int
	hours      []spacingRun
	scr        whatif.SpacingRecord
	v          xlog.Version
	seg        uint32
	page       uint32
	// online are the span's online checkpoint records: their LSN and
	// redo point.
	online [][2]xlog.LSN
}

type recentRel struct {
	rel stats.RelKey
	idx uint32
}

// Flags of a record and of a block in the stream.
const (
	spacingAborted = 1 << iota
	spacingHasTime
)

const (
	spacingWillInit = 1 << iota
	spacingHasImage
	spacingApply
	spacingCompressed
	spacingHole
)

// spacingRun: records from index from on are in the hour of key.
type spacingRun struct {
	from int
	key  growthKey
}

// spacingBufs are the streams of merged spans, reused.
var spacingBufs sync.Pool

// relIndexOf returns rk's index in sp.rels, adding it.
func (sp *spacingSpan) relIndexOf(rk stats.RelKey) uint32 {
	// the relations a record touches are few and recur: a small cache
	// of the last ones before the map
	for j := range sp.recent {
		if c := &sp.recent[j]; c.idx > 0 && c.rel == rk {
			return c.idx - 1
		}
	}
	idx, ok := sp.relIndex[rk]
	if !ok {
		if sp.relIndex == nil {
			sp.relIndex = map[stats.RelKey]uint32{}
		}
		idx = uint32(len(sp.rels))
		sp.rels = append(sp.rels, rk)
		sp.relIndex[rk] = idx
	}
	sp.recent[sp.nextRecent%len(sp.recent)] = recentRel{rk, idx + 1}
	sp.nextRecent++
	return idx
}

// addSpacing keeps what the simulation reads of rec, in the hour of k:
// the LSN's distance from the record before, the lengths, the rmgr and
// xl_info, the flags and the number of blocks, the time's distance from
// the last time (microseconds, if it tells one), then per block the
// relation fork's index, the block number, the block id, its flags, the
// image's length (if it has one) and the data's.
func (s *Span) addSpacing(rec *decode.Record, k growthKey) {
	sp := &s.growth.spacing
	if n := len(sp.hours); n == 0 || sp.hours[n-1].key.hour != k.hour || sp.hours[n-1].key.pending != k.pending {
		sp.hours = append(sp.hours, spacingRun{from: sp.n, key: growthKey{hour: k.hour, pending: k.pending}})
	}
	if sp.buf == nil {
		if b, ok := spacingBufs.Get().(*[]byte); ok {
			sp.buf = (*b)[:0]
		}
	}
	if sp.n == 0 {
		sp.first, sp.last = rec.LSN, rec.LSN
	}
	b := binary.AppendUvarint(sp.buf, uint64(rec.LSN-sp.last))
	sp.last = rec.LSN
	b = binary.AppendUvarint(b, uint64(rec.Header.TotLen))
	b = binary.AppendUvarint(b, uint64(rec.FPILen))
	var f byte
	if rec.Aborted != 0 {
		f |= spacingAborted
	}
	t, hasTime := stats.RecordTime(rec)
	if hasTime {
		f |= spacingHasTime
	}
	b = append(b, byte(rec.Header.Rmid), rec.Header.Info, f, byte(len(rec.Blocks)))
	if hasTime {
		us := t.UnixMicro()
		b = binary.AppendVarint(b, us-sp.us)
		sp.us = us
	}
	for i := range rec.Blocks {
		bl := &rec.Blocks[i]
		var bf byte
		for bit, on := range [...]bool{bl.WillInit(), bl.HasImage, bl.Apply, bl.Compression != decode.CompressNone, bl.HoleLength > 0} {
			if on {
				bf |= 1 << bit
			}
		}
		b = binary.AppendUvarint(b, uint64(sp.relIndexOf(stats.RelKey{RelFileLocator: bl.Rel, Fork: bl.Fork()})))
		b = binary.AppendUvarint(b, uint64(bl.Block))
		b = append(b, bl.ID, bf)
		if bl.HasImage {
			b = binary.AppendUvarint(b, uint64(bl.ImageLen))
		}
		b = binary.AppendUvarint(b, uint64(bl.DataLen))
	}
	sp.buf = b
	sp.n++
	sp.v, sp.seg, sp.page = rec.Version, rec.SegSize, rec.PageSize
	if rec.Header.Rmid == xlog.RmgrXLOG && rec.Header.Info&0xF0 == 0x10 { // CHECKPOINT_ONLINE
		if cp, ok := rmgr.Checkpoint(rec); ok {
			sp.online = append(sp.online, [2]xlog.LSN{rec.LSN, cp.Redo})
		}
	}
}

// spacingReader reads a span's stream back.
type spacingReader struct {
	buf  []byte
	lsn  xlog.LSN
	us   int64
	rels []stats.RelKey
}

func (rd *spacingReader) uvarint() uint64 {
	v, n := binary.Uvarint(rd.buf)
	rd.buf = rd.buf[n:]
	return v
}

// next reads the next record into r.
func (rd *spacingReader) next(r *whatif.SpacingRecord) {
	rd.lsn += xlog.LSN(rd.uvarint())
	r.LSN = rd.lsn
	r.TotLen = uint32(rd.uvarint())
	r.FPILen = uint32(rd.uvarint())
	r.Rmid, r.Info = xlog.RmgrID(rd.buf[0]), rd.buf[1]
	f, nb := rd.buf[2], int(rd.buf[3])
	rd.buf = rd.buf[4:]
	r.Aborted, r.HasTime = f&spacingAborted != 0, f&spacingHasTime != 0
	if r.HasTime {
		d, n := binary.Varint(rd.buf)
		rd.buf = rd.buf[n:]
		rd.us += d
		r.Time = time.UnixMicro(rd.us).UTC()
	}
	r.Blocks = r.Blocks[:0]
	for range nb {
		rel := rd.rels[rd.uvarint()]
		block := uint32(rd.uvarint())
		id, bf := rd.buf[0], rd.buf[1]
		rd.buf = rd.buf[2:]
		var imageLen uint16
		if bf&spacingHasImage != 0 {
			imageLen = uint16(rd.uvarint())
		}
		r.Blocks = append(r.Blocks, whatif.SpacingBlock{Key: stats.BlockKey{RelKey: rel, Block: block}, ID: id,
			WillInit: bf&spacingWillInit != 0, HasImage: bf&spacingHasImage != 0, Apply: bf&spacingApply != 0,
			Compressed: bf&spacingCompressed != 0, Hole: bf&spacingHole != 0, ImageLen: imageLen, DataLen: uint16(rd.uvarint())})
	}
}

// spacingCell is an hour's estimate.
type spacingCell struct {
	bytes       uint64
	saved       []int64
	checkpoints []int
	noData      []map[[3]uint8]uint64
}

// spacingTrack is the exporter's simulation and its cells.
type spacingTrack struct {
	stateFile []byte // the summary's state (SpacingStateName's content)
	sim       *whatif.Spacing
	scenarios []whatif.SpacingScenario
	current   whatif.CheckpointSettings
	assumed   []string
	dataLen   map[[3]uint8][2]uint64 // carried: the batches before
	cells     map[growthKey]*spacingCell
	start     xlog.LSN // the batch's first record
	resumed   bool     // from the state of the batch before
	err       error    // the carried state could not be read: no estimate
}

// startSpacing prepares the simulation at the batch's first record, at
// first, in WAL of pageSize pages and segSize segments of version v.
func (e *Exporter) startSpacing(first xlog.LSN, pageSize uint32, v xlog.Version, segSize uint32) {
	t := &e.growth.spacing
	t.cells = map[growthKey]*spacingCell{}
	t.start = first
	var given whatif.GivenSettings
	var st *spacingState
	if c := e.cfg.Spacing; c != nil {
		given = c.Given
		if len(c.Previous) > 0 {
			g := &e.previous
			if g.err != nil {
				t.err = g.err
				return
			}
			if g.Spacing != nil && g.Spacing.Version == GrowthSpacingVersion {
				var err error
				switch {
				case g.Spacing.StateFile != "":
					st, err = decodeSpacingFile(c.State, g.Spacing)
				default:
					st, err = decodeSpacingState(g.Spacing.State)
				}
				if err != nil {
					t.err = err
					return
				}
			}
		}
	}
	// What the spacing of the batch's checkpoints and of those before it
	// tells of the settings (stats.Reclassify, on a copy: the causes are
	// the export's).
	inferred := stats.Reclassify(e.cfg.Earlier, segSize, slices.Clone(e.cfg.Cycles))
	t.current, t.assumed = whatif.CurrentSettings(inferred, segSize, v, given)
	// (min_wal_size and wal_keep_size shape pg_wal, not the records)
	t.assumed = slices.DeleteFunc(t.assumed, func(s string) bool { return s == "min_wal_size" || s == "wal_keep_size" })
	t.scenarios = whatif.SpacingScenarios(t.current, segSize)
	t.dataLen = map[[3]uint8][2]uint64{}
	means := map[[3]uint8]uint32{}
	var sim *whatif.SpacingState
	if st != nil {
		for _, r := range st.DataLen {
			t.dataLen[[3]uint8{uint8(r[0]), uint8(r[1]), uint8(r[2])}] = [2]uint64{r[3], r[4]}
		}
		for k, v := range t.dataLen {
			means[k] = uint32(v[1] / v[0])
		}
		sim = &st.SpacingState
		t.resumed = true
	}
	in := whatif.WhatIfInput{PageSize: pageSize, SegSize: segSize, BlockSize: e.blockSize(), Start: first, Version: v,
		Cycles: e.cfg.Cycles, DataLen: means}
	sets := make([]whatif.CheckpointSettings, len(t.scenarios))
	for i, sc := range t.scenarios {
		sets[i] = sc.Settings
	}
	t.sim = whatif.NewSpacing(in, sets, sim)
}

func (t *spacingTrack) cell(k growthKey) *spacingCell {
	c := t.cells[k]
	if c == nil {
		n := len(t.scenarios)
		c = &spacingCell{saved: make([]int64, n), checkpoints: make([]int, n), noData: make([]map[[3]uint8]uint64, n)}
		t.cells[k] = c
	}
	return c
}

// mergeSpacing replays span s's records (after those of the spans before
// it); a pending hour takes beforeHour if before.
func (e *Exporter) mergeSpacing(s *Span, beforeHour int64, before bool) {
	sp := &s.growth.spacing
	t := &e.growth.spacing
	if sp.n == 0 {
		return
	}
	if t.sim == nil && t.err == nil {
		e.startSpacing(sp.first, sp.page, sp.v, sp.seg)
	}
	if t.err != nil {
		return
	}
	// A checkpoint begun in the batch before and ended in this one is
	// not among the batch's cycles (its redo point is before the batch's
	// first record, which the cycles begin with): taken as spread over
	// its interval (time or WAL; a requested one is immediate, and rarely
	// straddles two batches), as the whole stream would name it, its
	// record is not in the scenarios. (In the dataset's first batch, one
	// begun before the WAL read has no cause, as in whatif: kept.)
	for _, c := range sp.online {
		if t.resumed && c[1] < t.start && !slices.ContainsFunc(e.cfg.Cycles, func(cy stats.CycleInfo) bool { return cy.Checkpoint == c[0] }) {
			t.sim.DropCheckpoint(c[0])
		}
	}
	n := len(t.scenarios)
	was := make([]whatif.SpacingTotals, n)
	rd := spacingReader{buf: sp.buf, lsn: sp.first, rels: sp.rels}
	r := &sp.scr
	r.PageSize = sp.page
	for h, run := range sp.hours {
		to := sp.n
		if h+1 < len(sp.hours) {
			to = sp.hours[h+1].from
		}
		for i := range n {
			was[i] = t.sim.Totals(i)
		}
		var bytes uint64
		for range to - run.from {
			rd.next(r)
			t.sim.Add(r)
			bytes += uint64(r.TotLen)
		}
		k := run.key
		if k.pending && before {
			k.pending, k.hour = false, beforeHour
		}
		c := t.cell(k)
		c.bytes += bytes
		for i := range n {
			now := t.sim.Totals(i)
			c.saved[i] += int64(bytes) - int64(now.RecordBytes-was[i].RecordBytes) + int64(now.DataGiven-was[i].DataGiven)
			c.checkpoints[i] += now.Checkpoints - was[i].Checkpoints
			for key, v := range t.sim.TakeNoData(i) {
				if c.noData[i] == nil {
					c.noData[i] = map[[3]uint8]uint64{}
				}
				c.noData[i][key] += v
			}
		}
	}
	if sp.buf != nil {
		b := sp.buf[:0]
		spacingBufs.Put(&b)
	}
	*sp = spacingSpan{}
}

// spacingSummary is the batch's estimate by day, and the state it ends in
// (dataLen: the batch's own data lengths, GrowthSettings.DataLen's rows).
func (t *spacingTrack) summary(pendingHour int64, dayOfHour func(int64) string, dataLen [][5]uint64, batch int) *GrowthSpacing {
	if t.sim == nil {
		return nil
	}
	out := &GrowthSpacing{Version: GrowthSpacingVersion, MaxWALSize: whatif.FormatSize(t.current.MaxWALSize),
		CheckpointTimeout: whatif.FormatTimeout(t.current.Timeout), Assumed: t.assumed, Days: []GrowthSpacingDay{}}
	for i, sc := range t.scenarios {
		m, to := t.sim.Settings(i)
		out.Scenarios = append(out.Scenarios, GrowthSpacingScenario{Name: sc.Name, MaxWALSize: m, CheckpointTimeout: to})
	}
	n := len(t.scenarios)
	days := map[string]*GrowthSpacingDay{}
	noData := map[string][]map[[3]uint8]uint64{}
	for k, c := range t.cells {
		h := k.hour
		if k.pending {
			h = pendingHour
		}
		d := dayOfHour(h)
		x := days[d]
		if x == nil {
			x = &GrowthSpacingDay{Day: d, Saved: make([]int64, n), Checkpoints: make([]int, n), NoData: make([][][4]uint64, n)}
			days[d] = x
			noData[d] = make([]map[[3]uint8]uint64, n)
		}
		x.Bytes += c.bytes
		for i := range n {
			x.Saved[i] += c.saved[i]
			x.Checkpoints[i] += c.checkpoints[i]
			for key, v := range c.noData[i] {
				if noData[d][i] == nil {
					noData[d][i] = map[[3]uint8]uint64{}
				}
				noData[d][i][key] += v
			}
		}
	}
	for d, x := range days {
		for i := range n {
			x.NoData[i] = [][4]uint64{}
			for key, v := range noData[d][i] {
				x.NoData[i] = append(x.NoData[i], [4]uint64{uint64(key[0]), uint64(key[1]), uint64(key[2]), v})
			}
			sort.Slice(x.NoData[i], func(a, b int) bool { return slices.Compare(x.NoData[i][a][:3], x.NoData[i][b][:3]) < 0 })
		}
		out.Days = append(out.Days, *x)
	}
	sort.Slice(out.Days, func(i, j int) bool { return out.Days[i].Day < out.Days[j].Day })
	// The state: the simulation's, and the data lengths so far.
	st := spacingState{SpacingState: *t.sim.State(MaxSpacingBlocks)}
	sum := map[[3]uint8][2]uint64{}
	for k, v := range t.dataLen {
		sum[k] = v
	}
	for _, r := range dataLen {
		k := [3]uint8{uint8(r[0]), uint8(r[1]), uint8(r[2])}
		v := sum[k]
		sum[k] = [2]uint64{v[0] + r[3], v[1] + r[4]}
	}
	for k, v := range sum {
		st.DataLen = append(st.DataLen, [5]uint64{uint64(k[0]), uint64(k[1]), uint64(k[2]), v[0], v[1]})
	}
	sort.Slice(st.DataLen, func(i, j int) bool { return slices.Compare(st.DataLen[i][:3], st.DataLen[j][:3]) < 0 })
	out.StateBlocks, out.DroppedBlocks = len(st.SpacingState.Blocks), st.DroppedBlocks
	t.stateFile = encodeSpacingRaw(&st)
	out.StateFile, out.StateBytes = SpacingStateName(batch), len(t.stateFile)
	out.StateCRC32C = fmt.Sprintf("%08x", crc32.Checksum(t.stateFile, crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// previousGrowth is what a batch takes from the growth aggregate of the
// batch before it (SpacingCarry.Previous), parsed once: its spacing
// estimate (the state to resume) and settings estimate (the relations
// created by transactions still open).
type previousGrowth struct {
	Spacing  *GrowthSpacing  `json:"spacing"`
	Settings *GrowthSettings `json:"settings"`
	err      error
}

func parsePrevious(raw json.RawMessage) previousGrowth {
	var g previousGrowth
	if len(raw) > 0 {
		g.err = json.Unmarshal(raw, &g)
	}
	return g
}

// SpacingStateFile is the name of the spacing state file the growth
// aggregate growth (a Batch's Growth) names, "" for none (an inline state,
// or no estimate).
func SpacingStateFile(growth json.RawMessage) string {
	if g := parsePrevious(growth); g.err == nil && g.Spacing != nil {
		return g.Spacing.StateFile
	}
	return ""
}

// SpacingStateName is the name of batch id's spacing state file, in the
// manifest directory (not a .json: manifest readers pass it by).
func SpacingStateName(id int) string { return fmt.Sprintf("_spacing-%06d.state", id) }

// decodeSpacingFile reads the state file data that g names, checked
// against its size and CRC-32C.
func decodeSpacingFile(data []byte, g *GrowthSpacing) (*spacingState, error) {
	if data == nil {
		return nil, fmt.Errorf("spacing state: %s not read", g.StateFile)
	}
	if sum := fmt.Sprintf("%08x", crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))); len(data) != g.StateBytes || sum != g.StateCRC32C {
		return nil, fmt.Errorf("spacing state: %s holds %d bytes of CRC-32C %s, the manifest says %d of %s", g.StateFile, len(data), sum, g.StateBytes, g.StateCRC32C)
	}
	return decodeSpacingRaw(data)
}

// encodeTouches appends the carried blocks to out compactly: sorted by
// relation fork and block, each as varints of the key's fields, or only
// the block number's difference where the relation fork is the previous
// block's, then per scenario the cycles before its current one it last
// changed in (0: untouched). Sorted, the state is a sixth of its size in
// the order the blocks were first seen (fixtures/whatif-settings/wal-32MB:
// 1.5 KB against 9.2 KB); the keys are packed in integers to sort, which
// with a comparison of the keys' fields cost 1.4% of an append's CPU.
func encodeTouches(out []byte, st *whatif.SpacingState, cycles []int) []byte {
	n := len(cycles)
	type packed struct {
		loc, relFork uint64 // tablespace, database; relation, fork
		block        uint32
		row          int32
	}
	order := make([]packed, len(st.Blocks))
	for i, k := range st.Blocks {
		order[i] = packed{uint64(k.SpcOID)<<32 | uint64(k.DBOID), uint64(k.RelNumber)<<8 | uint64(k.Fork), k.Block, int32(i)}
	}
	slices.SortFunc(order, func(a, b packed) int {
		switch {
		case a.loc != b.loc:
			return cmp.Compare(a.loc, b.loc)
		case a.relFork != b.relFork:
			return cmp.Compare(a.relFork, b.relFork)
		}
		return cmp.Compare(a.block, b.block)
	})
	var prev stats.BlockKey
	for i, o := range order {
		k := st.Blocks[o.row]
		switch {
		case i > 0 && k.RelKey == prev.RelKey:
			out = binary.AppendUvarint(out, 0)
			out = binary.AppendUvarint(out, uint64(k.Block-prev.Block))
		default:
			out = binary.AppendUvarint(out, 1)
			out = binary.AppendUvarint(out, uint64(k.SpcOID))
			out = binary.AppendUvarint(out, uint64(k.DBOID))
			out = binary.AppendUvarint(out, uint64(k.RelNumber))
			out = binary.AppendUvarint(out, uint64(k.Fork))
			out = binary.AppendUvarint(out, uint64(k.Block))
		}
		for s, c := range st.Cycles[int(o.row)*n : int(o.row+1)*n] {
			if c == whatif.SpacingUntouched {
				out = binary.AppendUvarint(out, 0)
			} else {
				out = binary.AppendUvarint(out, uint64(int64(cycles[s])-int64(c))+1)
			}
		}
		prev = k
	}
	return out
}

// decodeTouches reads count blocks of encodeTouches into st.
func decodeTouches(data []byte, count int, st *whatif.SpacingState, cycles []int) error {
	st.Blocks = make([]stats.BlockKey, 0, count)
	st.Cycles = make([]int32, 0, count*len(cycles))
	var prev stats.BlockKey
	bad := false
	next := func() uint64 {
		v, n := binary.Uvarint(data)
		if n <= 0 {
			bad = true
			return 0
		}
		data = data[n:]
		return v
	}
	for len(data) > 0 && !bad {
		k := prev
		if next() == 0 {
			k.Block += uint32(next())
		} else {
			var f [5]uint64
			for i := range f {
				f[i] = next()
			}
			k = stats.BlockKey{RelKey: stats.RelKey{RelFileLocator: decode.RelFileLocator{SpcOID: uint32(f[0]), DBOID: uint32(f[1]), RelNumber: uint32(f[2])},
				Fork: decode.ForkNumber(f[3])}, Block: uint32(f[4])}
		}
		st.Blocks = append(st.Blocks, k)
		for s := range cycles {
			if v := next(); v == 0 {
				st.Cycles = append(st.Cycles, whatif.SpacingUntouched)
			} else {
				st.Cycles = append(st.Cycles, int32(int64(cycles[s])-int64(v-1)))
			}
		}
		prev = k
	}
	if bad || len(st.Blocks) != count {
		return fmt.Errorf("spacing state: %d blocks of %d readable", len(st.Blocks), count)
	}
	return nil
}

// encodeSpacingRaw is st deflated: its JSON's length (a varint), its
// JSON, its blocks (encodeTouches).
func encodeSpacingRaw(st *spacingState) []byte {
	cycles := make([]int, len(st.Scenarios))
	for i, s := range st.Scenarios {
		cycles[i] = s.Cycle
	}
	st.NBlocks = len(st.SpacingState.Blocks)
	js, _ := json.Marshal(st)
	raw := binary.AppendUvarint(nil, uint64(len(js)))
	raw = encodeTouches(append(raw, js...), &st.SpacingState, cycles)
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	w.Write(raw)
	w.Close()
	return b.Bytes()
}

// encodeSpacingState is encodeSpacingRaw in base64 (the inline state of a
// walscope before the state file).
func encodeSpacingState(st *spacingState) string {
	return base64.StdEncoding.EncodeToString(encodeSpacingRaw(st))
}

// decodeSpacingState reads an inline state (base64).
func decodeSpacingState(s string) (*spacingState, error) {
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("spacing state: %w", err)
	}
	return decodeSpacingRaw(z)
}

// decodeSpacingRaw reads encodeSpacingRaw's bytes.
func decodeSpacingRaw(z []byte) (*spacingState, error) {
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
	if err != nil {
		return nil, fmt.Errorf("spacing state: %w", err)
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || uint64(len(raw)-k) < n {
		return nil, fmt.Errorf("spacing state: truncated")
	}
	var st spacingState
	if err := json.Unmarshal(raw[k:k+int(n)], &st); err != nil {
		return nil, fmt.Errorf("spacing state: %w", err)
	}
	cycles := make([]int, len(st.Scenarios))
	for i, sc := range st.Scenarios {
		cycles[i] = sc.Cycle
	}
	if err := decodeTouches(raw[k+int(n):], st.NBlocks, &st.SpacingState, cycles); err != nil {
		return nil, err
	}
	return &st, nil
}
