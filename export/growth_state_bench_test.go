package export

import (
	"math/rand/v2"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/whatif"
)

// BenchmarkSpacingState measures the carried checkpoint spacing state at
// its bound, MaxSpacingBlocks (2^20) blocks: encoding it (each append's
// end), decoding it (the next one's start), and its size in the manifest
// (state_bytes: the state file, the deflated varints). The blocks are 200
// relations of 5,243 consecutive blocks each (a cluster whose nights touch
// 8 GB of tables and indexes); each scenario's cycle of a block drawn
// among its last 40, a quarter untouched.
func BenchmarkSpacingState(b *testing.B) {
	st := &spacingState{}
	const scenarios = 3
	for i := range scenarios {
		st.Scenarios = append(st.Scenarios, whatif.SpacingScenarioState{Cycle: 40 + i})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	per := MaxSpacingBlocks / 200
	for rel := range 200 {
		for blk := range per {
			st.Blocks = append(st.Blocks, stats.BlockKey{RelKey: stats.RelKey{RelFileLocator: decode.RelFileLocator{SpcOID: 1663, DBOID: 16384, RelNumber: uint32(16400 + rel)}}, Block: uint32(blk)})
			for s := range scenarios {
				c := int32(st.Scenarios[s].Cycle - rng.IntN(40))
				if rng.IntN(4) == 0 {
					c = whatif.SpacingUntouched
				}
				st.Cycles = append(st.Cycles, c)
			}
		}
	}
	enc := encodeSpacingRaw(st)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			encodeSpacingRaw(st)
		}
		b.ReportMetric(float64(len(enc)), "state_bytes")
		b.ReportMetric(float64(len(st.Blocks)), "blocks")
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			got, err := decodeSpacingRaw(enc)
			if err != nil || len(got.Blocks) != len(st.Blocks) {
				b.Fatalf("%v: %d blocks", err, len(got.Blocks))
			}
		}
	})
}
