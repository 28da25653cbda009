package export

import (
	"sort"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// The growth aggregate's settings estimate (issue 29: "what the what-if
// settings would have saved over the period"): for full_page_writes = off
// and for wal_level = replica and minimal, the parts of `walscope whatif`'s
// estimate (whatif.WhatIf: placeWithout, placeLevel) that depend on a
// record alone or on state a batch holds whole, counted per day as the
// batch reads its records, so that the reader (package growth) sums days
// into what `walscope whatif` gives for the same WAL, in record bytes
// (sum(total_length)), exactly:
//
//   - full_page_writes = off drops every image but the forced ones (XLOG
//     FPI and FPI_FOR_HINT, and the images of wal_consistency_checking:
//     whatif's forcedImage) with its 5- or 7-byte image header, and gives
//     a block that carried no data beside its image the mean data length
//     of image-less references of the same resource manager, record type
//     and block id (whatif.DataLenLearner). The mean needs the whole
//     period: a day keeps the dropped images' bytes and, per key, how many
//     had no data, and the batch the data lengths it learnt (sum and
//     count per key); the reader divides over the period's batches.
//   - wal_level drops NEW_CID and transaction INVALIDATION records and the
//     5-byte top-level xid header (below logical), the database info of a
//     COMMIT or ABORT that carries nothing else (below logical), and, for
//     minimal, the hot-standby records (Standby LOCK, RUNNING_XACTS) and
//     the records of relations created by the same transaction. Which
//     scenarios apply depends on the stream's wal_level, which the reader
//     decides over the period from what each day stated and showed
//     (whatif.LevelGuesser's rules), as whatif decides it over its stream.
//
// Checkpoint spacing (whatif's max_wal_size and checkpoint_timeout
// scenarios) needs every block a checkpoint cycle touched and a simulated
// checkpointer in WAL order, carried across spans and nights: it is
// growth_checkpoints.go's.
//
// A relation created by a transaction still open at the end of a span is
// carried to the spans after it (Exporter.Merge is in WAL order). A span
// reads without knowing the spans before it, so it keeps, per relation it
// did not see created, the records of the first transaction writing to it
// until that transaction ends (relCand): a relation created by a
// transaction still open is invisible to every other one, so that
// transaction is its first writer; the merge drops them if the transaction
// created the relation in an earlier span. Records whose blocks are in two
// relations that an earlier span saw created are kept (whatif drops them):
// rare, and an under-estimate of minimal's saving. Across batches the
// relations created by transactions still open at a batch's end are
// carried in its manifest (GrowthSettings.OpenCreated), which the next
// batch takes as the spans before its first: a batch ends at a redo point,
// often inside a transaction that creates and loads a table. (A manifest
// of a walscope before carries nothing: such a transaction's records in
// the next batch are counted as kept, an under-estimate.)

// GrowthSettingsVersion is the version of the settings estimate
// (Growth.Settings) this walscope writes and reads; a manifest without it
// (written before it) has no estimate, which the reader says.
const GrowthSettingsVersion = 1

// GrowthSettings is a batch's settings estimate.
type GrowthSettings struct {
	Version int `json:"settings_version"`
	// DataLen are the image-less block references the batch read: rows of
	// [rmgr id, record type (xl_info & 0xF0), block id, count, sum of
	// their data lengths] (whatif.DataLenLearner), sorted.
	DataLen [][5]uint64 `json:"data_len"`
	// Days are the days of the batch's records.
	Days []GrowthSettingsDay `json:"days"`
	// OpenCreated are the relations created by the transactions still
	// open at the batch's end (smgr CREATE): rows of [top-level xid,
	// tablespace, database, relfilenode], sorted; the next batch drops
	// those transactions' records of them under wal_level = minimal.
	OpenCreated [][4]uint64 `json:"open_created,omitempty"`
}

// GrowthSettingsDay is what a day of the batch counted.
type GrowthSettingsDay struct {
	Day string `json:"day"`
	// FPWImages are the images full_page_writes = off drops, FPWBytes
	// their bytes and image headers; FPWNoData, rows of [rmgr id, record
	// type, block id, count], those of them whose block carried no data
	// (it is given the key's mean data length).
	FPWImages uint64      `json:"fpw_images"`
	FPWBytes  uint64      `json:"fpw_bytes"`
	FPWNoData [][4]uint64 `json:"fpw_no_data,omitempty"`
	// LogicalOnly are the bytes of NEW_CID and INVALIDATION records.
	LogicalOnly uint64 `json:"logical_only_bytes"`
	// XidHeader and DBInfo are the top-level xid headers' bytes and the
	// commit database info's bytes of the records minimal keeps;
	// MinimalDropped the bytes of the records minimal drops (standby
	// records, relations created in their transaction), whose own xid
	// headers and database info are MinimalXidHeader and MinimalDBInfo.
	XidHeader        uint64 `json:"xid_header_bytes"`
	DBInfo           uint64 `json:"dbinfo_bytes"`
	MinimalDropped   uint64 `json:"minimal_dropped_bytes"`
	MinimalXidHeader uint64 `json:"minimal_xid_header_bytes,omitempty"`
	MinimalDBInfo    uint64 `json:"minimal_dbinfo_bytes,omitempty"`
	// The wal_level evidence of the day's records: the last level a
	// record stated (PARAMETER_CHANGE, a 17+ checkpoint; "" none), and
	// whether records only logical writes, or hot-standby records, were
	// seen.
	StatedLevel string `json:"stated_wal_level,omitempty"`
	Logical     bool   `json:"logical_seen,omitempty"`
	Replica     bool   `json:"replica_seen,omitempty"`
}

// settingsCell is one hour's counts (a span's or the exporter's).
type settingsCell struct {
	fpwImages, fpwBytes                 uint64
	noData                              map[[3]uint8]uint64
	logicalOnly, xidHeader, dbInfo      uint64
	minDropped, minXidHeader, minDBInfo uint64
	stated                              xlog.WalLevel // WalLevelUnknown: none
	logical, replica                    bool
}

func newSettingsCell() *settingsCell { return &settingsCell{stated: xlog.WalLevelUnknown} }

// add adds o, which follows c in WAL order.
func (c *settingsCell) add(o *settingsCell) {
	c.fpwImages += o.fpwImages
	c.fpwBytes += o.fpwBytes
	for k, n := range o.noData {
		if c.noData == nil {
			c.noData = map[[3]uint8]uint64{}
		}
		c.noData[k] += n
	}
	c.logicalOnly += o.logicalOnly
	c.xidHeader += o.xidHeader
	c.dbInfo += o.dbInfo
	c.minDropped += o.minDropped
	c.minXidHeader += o.minXidHeader
	c.minDBInfo += o.minDBInfo
	if o.stated != xlog.WalLevelUnknown {
		c.stated = o.stated
	}
	c.logical = c.logical || o.logical
	c.replica = c.replica || o.replica
}

// relCand is what minimal may drop of a relation the span did not see
// created: the records of the first transaction that wrote to it in the
// span, until it ended. A relation created by a transaction still open is
// invisible to every other one, so if it was created before the span (by
// a transaction open at the span's start) that transaction writes to it
// first; another transaction writing to it before the first ended means
// the first did not create it (poisoned). One entry per relation, not per
// record: a record's run cost the append 10% more CPU (growslice), a map
// insert per record 15%.
type relCand struct {
	xid      xlog.XID
	poisoned bool
	ended    bool // xid ended in the span: later writers are others
	runs     []candRun
}

// candRun is the candidate's records of one hour: their bytes and
// top-level xid headers (counted as kept in their hour's cell until the
// merge finds the relation created before the span).
type candRun struct {
	hour      int64
	pending   bool
	xidHeader uint64
	bytes     uint64
}

// settingsTrack is a span's settings counts, or the exporter's merged
// ones with the relations created by transactions still open.
type settingsTrack struct {
	byHour  map[growthKey]*settingsCell
	lastKey growthKey
	last    *settingsCell
	// dataLen[rmgr][info>>4][block id] = {count, sum}
	dataLen [256]*[16][][2]uint64
	// created are the relations each transaction created (smgr CREATE),
	// of this span, or (the exporter's) of the transactions open after
	// the spans merged; ended the transactions the span saw end.
	created map[xlog.XID]map[decode.RelFileLocator]bool
	ended   []xlog.XID
	// cands are, by relation, the span's records of the first transaction
	// writing to it, which it did not see create the relation (resolved at
	// the merge); candXids their transactions.
	cands    map[decode.RelFileLocator]*relCand
	candXids map[xlog.XID][]*relCand
	lastRel  decode.RelFileLocator
	lastCand *relCand
}

func (t *settingsTrack) cell(k growthKey) *settingsCell {
	if t.last != nil && t.lastKey == k {
		return t.last
	}
	c := t.byHour[k]
	if c == nil {
		if t.byHour == nil {
			t.byHour = map[growthKey]*settingsCell{}
		}
		c = newSettingsCell()
		t.byHour[k] = c
	}
	t.lastKey, t.last = k, c
	return c
}

// imageHeader is the block header bytes an image adds: the 5-byte
// XLogRecordBlockImageHeader, and the 2-byte compress header when a
// compressed image has a hole (whatif's imageHeader).
func imageHeader(b *decode.BlockRef) uint64 {
	if b.Compression != decode.CompressNone && b.HoleLength > 0 {
		return 7
	}
	return 5
}

// addSettings counts rec in the hour of k (the growth cell's hour).
func (s *Span) addSettings(rec *decode.Record, k growthKey) {
	t := &s.growth.settings
	k = growthKey{hour: k.hour, pending: k.pending}
	c := t.cell(k)
	h := &rec.Header
	id, info := h.Rmid, h.Info
	// full_page_writes = off (whatif.placeWithout with forcedImage), and
	// the data lengths it learns (DataLenLearner).
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if !b.HasImage {
			row := t.dataLen[id]
			if row == nil {
				row = &[16][][2]uint64{}
				t.dataLen[id] = row
			}
			col := &row[info>>4]
			for int(b.ID) >= len(*col) {
				*col = append(*col, [2]uint64{})
			}
			(*col)[b.ID][0]++
			(*col)[b.ID][1] += uint64(b.DataLen)
			continue
		}
		if id == xlog.RmgrXLOG || !b.Apply {
			continue // forced: written whatever full_page_writes says
		}
		c.fpwImages++
		c.fpwBytes += uint64(b.ImageLen) + imageHeader(b)
		if b.DataLen == 0 {
			if c.noData == nil {
				c.noData = map[[3]uint8]uint64{}
			}
			c.noData[[3]uint8{uint8(id), info & 0xF0, b.ID}]++
		}
	}
	// wal_level: the evidence (whatif.LevelGuesser), then what the lower
	// levels drop (whatif.placeLevel).
	if id == xlog.RmgrXLOG {
		if cp, ok := rmgr.Checkpoint(rec); ok && cp.WalLevel >= xlog.WalLevelMinimal {
			c.stated = cp.WalLevel
		}
		if pc, ok := rmgr.ParameterChange(rec); ok {
			c.stated = pc.WalLevel
		}
	}
	md := rec.MainData
	switch {
	case id == xlog.RmgrHeap2 && info&0x70 == 0x70, id == xlog.RmgrTransaction && info&0x70 == 0x60, rec.ToplevelXID != 0:
		c.logical = true
	case id == xlog.RmgrHeap && info&0x70 == 0x00 && len(md) >= 3 && md[2]&0x08 != 0,
		id == xlog.RmgrHeap && (info&0x70 == 0x20 || info&0x70 == 0x40) && len(md) >= 8 && md[7]&0x10 != 0:
		c.logical = true
	case id == xlog.RmgrStandby && (info&0xF0 == 0x00 || info&0xF0 == 0x10):
		c.replica = true
	}
	tot := uint64(h.TotLen)
	if id == xlog.RmgrHeap2 && info&0x70 == 0x70 || id == xlog.RmgrTransaction && info&0x70 == 0x60 {
		c.logicalOnly += tot // NEW_CID, INVALIDATION
		return
	}
	var xidHeader, dbInfo uint64
	if rec.ToplevelXID != 0 {
		xidHeader = 5
	}
	if id == xlog.RmgrTransaction && info&0x80 != 0 && (info&0x70 == 0x00 || info&0x70 == 0x20) {
		if len(md) >= 12 && le32(md[8:])&0x0D == 0x01 {
			dbInfo = 8
			if le32(md[8:]) == 0x01 {
				dbInfo += 4
			}
		}
	}
	drop := func() {
		c.minDropped += tot
		c.minXidHeader += xidHeader
		c.minDBInfo += dbInfo
	}
	if id == xlog.RmgrStandby && (info&0xF0 == 0x00 || info&0xF0 == 0x10) {
		drop()
		return
	}
	xid := h.XID
	if rec.ToplevelXID != 0 {
		xid = rec.ToplevelXID
	}
	if id == xlog.RmgrStorage && info&0xF0 == 0x10 && xid != 0 && len(md) >= 16 {
		// smgr CREATE: xl_smgr_create { RelFileLocator rlocator; ForkNumber forkNum }
		rel := decode.RelFileLocator{SpcOID: le32(md[0:]), DBOID: le32(md[4:]), RelNumber: le32(md[8:])}
		if t.created == nil {
			t.created = map[xlog.XID]map[decode.RelFileLocator]bool{}
		}
		if t.created[xid] == nil {
			t.created[xid] = map[decode.RelFileLocator]bool{}
		}
		t.created[xid][rel] = true
	}
	if len(rec.Blocks) > 0 && xid != 0 {
		rels := t.created[xid]
		all, one := true, true
		for i := range rec.Blocks {
			all = all && rels[rec.Blocks[i].Rel]
			one = one && rec.Blocks[i].Rel == rec.Blocks[0].Rel
		}
		if all && rels != nil {
			drop()
			return
		}
		if one {
			// The relation may have been created by the transaction in a
			// span before this one: settled at the merge. (A record with
			// blocks is no COMMIT: it has no database info.)
			if t.addCandidate(rec.Blocks[0].Rel, xid, k, tot, xidHeader) {
				c.xidHeader += xidHeader
				return
			}
		}
	}
	if id == xlog.RmgrTransaction {
		if _, ok := rmgr.XactEnd(rec); ok {
			t.ended = append(t.ended, xid)
			delete(t.created, xid)
			for _, rc := range t.candXids[xid] {
				rc.ended = true
			}
		}
	}
	c.xidHeader += xidHeader
	c.dbInfo += dbInfo
}

// carryCreated takes, from the last batch's settings estimate (nil for
// the first batch, or an aggregate that could not be read: the estimate
// then keeps those records, as before the carry), the relations created
// by transactions open at its end.
func (t *settingsTrack) carryCreated(previous *GrowthSettings) {
	if previous == nil {
		return
	}
	for _, r := range previous.OpenCreated {
		x := xlog.XID(r[0])
		if t.created == nil {
			t.created = map[xlog.XID]map[decode.RelFileLocator]bool{}
		}
		if t.created[x] == nil {
			t.created[x] = map[decode.RelFileLocator]bool{}
		}
		t.created[x][decode.RelFileLocator{SpcOID: uint32(r[1]), DBOID: uint32(r[2]), RelNumber: uint32(r[3])}] = true
	}
}

// addCandidate notes a record of xid whose blocks are all in rel as a
// candidate, and reports whether it is one (rel's first writer in the
// span, not yet ended).
func (t *settingsTrack) addCandidate(rel decode.RelFileLocator, xid xlog.XID, k growthKey, tot, xidHeader uint64) bool {
	rc := t.lastCand
	if rc == nil || t.lastRel != rel {
		rc = t.cands[rel]
		if rc == nil {
			if t.cands == nil {
				t.cands = map[decode.RelFileLocator]*relCand{}
				t.candXids = map[xlog.XID][]*relCand{}
			}
			rc = &relCand{xid: xid}
			t.cands[rel] = rc
			t.candXids[xid] = append(t.candXids[xid], rc)
		}
		t.lastRel, t.lastCand = rel, rc
	}
	if rc.poisoned || rc.ended {
		return false
	}
	if rc.xid != xid {
		rc.poisoned, rc.runs = true, nil
		return false
	}
	if n := len(rc.runs); n > 0 && rc.runs[n-1].hour == k.hour && rc.runs[n-1].pending == k.pending {
		rc.runs[n-1].bytes += tot
		rc.runs[n-1].xidHeader += xidHeader
	} else {
		rc.runs = append(rc.runs, candRun{hour: k.hour, pending: k.pending, xidHeader: xidHeader, bytes: tot})
	}
	return true
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// mergeSettings takes span s's counts (after those of the spans before
// it); a pending hour takes beforeHour if before.
func (t *settingsTrack) mergeSettings(s *settingsTrack, beforeHour int64, before bool) {
	resolve := func(k growthKey) growthKey {
		if k.pending && before {
			k.pending, k.hour = false, beforeHour
		}
		return k
	}
	for k, c := range s.byHour {
		t.cell(resolve(k)).add(c)
	}
	// The candidates: dropped if the transaction created the relation in
	// a span before (t.created: open at the end of those spans); their
	// hour counted them as kept.
	if len(t.created) > 0 {
		for rel, rc := range s.cands {
			if rc.poisoned || !t.created[rc.xid][rel] {
				continue
			}
			for _, r := range rc.runs {
				c := t.cell(resolve(growthKey{hour: r.hour, pending: r.pending}))
				c.minDropped += r.bytes
				c.minXidHeader += r.xidHeader
				c.xidHeader -= r.xidHeader
			}
		}
	}
	s.cands, s.candXids = nil, nil
	for id, row := range s.dataLen {
		if row == nil {
			continue
		}
		if t.dataLen[id] == nil {
			t.dataLen[id] = &[16][][2]uint64{}
		}
		for info, col := range row {
			dst := &t.dataLen[id][info]
			for len(*dst) < len(col) {
				*dst = append(*dst, [2]uint64{})
			}
			for b, v := range col {
				(*dst)[b][0] += v[0]
				(*dst)[b][1] += v[1]
			}
		}
	}
	// The transactions still open with relations they created: those of
	// the spans before, less the ones that ended in s, and s's own.
	for _, x := range s.ended {
		delete(t.created, x)
	}
	for x, rels := range s.created {
		if t.created == nil {
			t.created = map[xlog.XID]map[decode.RelFileLocator]bool{}
		}
		if t.created[x] == nil {
			t.created[x] = map[decode.RelFileLocator]bool{}
		}
		for r := range rels {
			t.created[x][r] = true
		}
	}
}

// summary is the batch's estimate, by day; pendingHour is the hour of the
// cells still pending.
func (t *settingsTrack) summary(pendingHour int64, dayOfHour func(int64) string) *GrowthSettings {
	out := &GrowthSettings{Version: GrowthSettingsVersion, DataLen: [][5]uint64{}, Days: []GrowthSettingsDay{}}
	for id, row := range t.dataLen {
		if row == nil {
			continue
		}
		for info, col := range row {
			for b, v := range col {
				if v[0] > 0 {
					out.DataLen = append(out.DataLen, [5]uint64{uint64(id), uint64(info) << 4, uint64(b), v[0], v[1]})
				}
			}
		}
	}
	// Days in WAL order of their cells: the hours sorted (pending ones are
	// the batch's first), so that the last stated level is the last.
	keys := make([]growthKey, 0, len(t.byHour))
	for k := range t.byHour {
		keys = append(keys, k)
	}
	hourOf := func(k growthKey) int64 {
		if k.pending {
			return pendingHour
		}
		return k.hour
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := hourOf(keys[i]), hourOf(keys[j])
		if a != b {
			return a < b
		}
		return keys[i].pending && !keys[j].pending
	})
	byDay := map[string]*settingsCell{}
	var order []string
	for _, k := range keys {
		d := dayOfHour(hourOf(k))
		if byDay[d] == nil {
			byDay[d] = newSettingsCell()
			order = append(order, d)
		}
		byDay[d].add(t.byHour[k])
	}
	for x, rels := range t.created {
		for r := range rels {
			out.OpenCreated = append(out.OpenCreated, [4]uint64{uint64(x), uint64(r.SpcOID), uint64(r.DBOID), uint64(r.RelNumber)})
		}
	}
	sort.Slice(out.OpenCreated, func(i, j int) bool {
		a, b := out.OpenCreated[i], out.OpenCreated[j]
		for x := range 4 {
			if a[x] != b[x] {
				return a[x] < b[x]
			}
		}
		return false
	})
	sort.Strings(order)
	for _, d := range order {
		c := byDay[d]
		day := GrowthSettingsDay{Day: d, FPWImages: c.fpwImages, FPWBytes: c.fpwBytes, LogicalOnly: c.logicalOnly,
			XidHeader: c.xidHeader, DBInfo: c.dbInfo, MinimalDropped: c.minDropped, MinimalXidHeader: c.minXidHeader, MinimalDBInfo: c.minDBInfo,
			Logical: c.logical, Replica: c.replica}
		if c.stated.Valid() {
			day.StatedLevel = c.stated.String()
		}
		for k, n := range c.noData {
			day.FPWNoData = append(day.FPWNoData, [4]uint64{uint64(k[0]), uint64(k[1]), uint64(k[2]), n})
		}
		sort.Slice(day.FPWNoData, func(i, j int) bool {
			a, b := day.FPWNoData[i], day.FPWNoData[j]
			for x := range 3 {
				if a[x] != b[x] {
					return a[x] < b[x]
				}
			}
			return false
		})
		out.Days = append(out.Days, day)
	}
	return out
}
