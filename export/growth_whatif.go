package export

import (
	"sort"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// The growth aggregate's wal_compression estimate: what the images would
// have taken under wal_compression = off, pglz, lz4 and zstd. Compressing
// every image three times would cost an append more than its export, so a
// sample is taken: the images whose record LSN and block id hash to 0
// modulo GrowthWhatIfSample (one in 16, spread over the WAL), each page
// rebuilt and sized by decode.Recompressor as PostgreSQL's
// XLogCompressBackupBlock would store it. A reader scales the day's
// image_bytes by the sample's ratios (package growth).

// GrowthWhatIfSample is one in how many images the estimate sizes.
const GrowthWhatIfSample = 16

// GrowthWhatIf is the sample of one day: images sized, their stored bytes
// (bimg_len, as the WAL has them) and their bytes under each
// wal_compression (the image data, without headers).
type GrowthWhatIf struct {
	Day    string `json:"day"`
	Images uint64 `json:"images"`
	Stored uint64 `json:"stored_bytes"`
	Off    uint64 `json:"off_bytes"`
	PGLZ   uint64 `json:"pglz_bytes"`
	LZ4    uint64 `json:"lz4_bytes"`
	Zstd   uint64 `json:"zstd_bytes"`
	// Failed counts sampled images whose page could not be rebuilt (left
	// out).
	Failed uint64 `json:"failed,omitempty"`
}

func (w *GrowthWhatIf) add(o *GrowthWhatIf) {
	w.Images += o.Images
	w.Stored += o.Stored
	w.Off += o.Off
	w.PGLZ += o.PGLZ
	w.LZ4 += o.LZ4
	w.Zstd += o.Zstd
	w.Failed += o.Failed
}

// growthWhatIfCap is how many images of an hour a span sizes at one in
// GrowthWhatIfSample; after them, one in growthWhatIfThin of the hour's
// images are, each counted growthWhatIfThin/GrowthWhatIfSample times (its
// inverse chance of being sized against the others': the sums stay
// estimates of one in GrowthWhatIfSample's). A busy hour's images are
// alike enough that its first few hundred sized bound the ratio's error,
// and sizing them cost an append more than all the rest it adds to an
// export (issue 29).
var growthWhatIfCap uint64 = 256

const growthWhatIfThin = 64

// sampleWeight returns the weight of the image of block id of the record
// at lsn in the sample (0: not sized), when sized images of its hour were
// sized before it (a multiplicative hash: WAL positions are 8-aligned; one
// in growthWhatIfThin hashes is one in GrowthWhatIfSample's too).
func sampleWeight(lsn xlog.LSN, id uint8, sized uint64) uint64 {
	h := (uint64(lsn)>>3 ^ uint64(id)<<56) * 0x9E3779B97F4A7C15
	switch r := h >> 32; {
	case r%GrowthWhatIfSample != 0:
		return 0
	case sized < growthWhatIfCap:
		return 1
	case r%growthWhatIfThin != 0:
		return 0
	}
	return growthWhatIfThin / GrowthWhatIfSample
}

// growthSizer is a span's sample: by hour key (as the cells), and the
// buffers that size it.
type growthSizer struct {
	byHour map[growthKey]*GrowthWhatIf
	rc     decode.Recompressor
	page   []byte
}

// sizeImages sizes the record's sampled images into the hour of k.
func (s *Span) sizeImages(dec *decode.Decoder, rec *decode.Record, k growthKey) {
	if dec == nil {
		return
	}
	z := &s.sizer
	k = growthKey{hour: k.hour, pending: k.pending}
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if !b.HasImage || sampleWeight(rec.LSN, b.ID, 0) == 0 {
			continue
		}
		if z.byHour == nil {
			z.byHour = map[growthKey]*GrowthWhatIf{}
		}
		w := z.byHour[k]
		if w == nil {
			w = &GrowthWhatIf{}
			z.byHour[k] = w
		}
		weight := sampleWeight(rec.LSN, b.ID, w.Images+w.Failed)
		if weight == 0 {
			continue
		}
		var err error
		z.page, err = dec.AppendPage(z.page[:0], rec, b)
		if err != nil || len(z.page) != dec.BlockSize || int(b.HoleOffset)+int(b.HoleLength) > len(z.page) {
			w.Failed++
			continue
		}
		w.Images++
		w.Stored += weight * uint64(b.ImageLen)
		off, hl := int(b.HoleOffset), int(b.HoleLength)
		w.Off += weight * uint64(z.rc.EstimateImage(z.page, off, hl, decode.CompressNone).StoredLen)
		w.PGLZ += weight * z.size(b, off, hl, decode.CompressPGLZ)
		w.LZ4 += weight * z.size(b, off, hl, decode.CompressLZ4)
		w.Zstd += weight * z.size(b, off, hl, decode.CompressZstd)
	}
}

// size is the image's bimg_len under method: the one the WAL stores when
// the image was compressed with method (what the server wrote, with the
// library it was built with: exact where the recompression is not quite,
// as klauspost's zstd against libzstd, and a compression fewer), else the
// page compressed again.
func (z *growthSizer) size(b *decode.BlockRef, holeOffset, holeLength int, method decode.Compression) uint64 {
	if b.Compression == method {
		return uint64(b.ImageLen)
	}
	return uint64(z.rc.EstimateImage(z.page, holeOffset, holeLength, method).StoredLen)
}

// mergeSizer takes span s's sample, its pending hours given before's hour
// (zero: left pending).
func (g *growthTrack) mergeSizer(s *Span, beforeHour int64, before bool) {
	if g.sample == nil {
		g.sample = map[growthKey]*GrowthWhatIf{}
	}
	for k, w := range s.sizer.byHour {
		if k.pending && before {
			k.pending, k.hour = false, beforeHour
		}
		if g.sample[k] == nil {
			g.sample[k] = &GrowthWhatIf{}
		}
		g.sample[k].add(w)
	}
}

// whatIfDays groups the sample by day; pendingHour is the hour of the cells
// still pending.
func (g *growthTrack) whatIfDays(pendingHour int64, dayOfHour func(int64) string) []GrowthWhatIf {
	byDay := map[string]*GrowthWhatIf{}
	for k, w := range g.sample {
		h := k.hour
		if k.pending {
			h = pendingHour
		}
		d := dayOfHour(h)
		if byDay[d] == nil {
			byDay[d] = &GrowthWhatIf{Day: d}
		}
		byDay[d].add(w)
	}
	out := []GrowthWhatIf{}
	for _, w := range byDay {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Day < out[j].Day })
	return out
}
