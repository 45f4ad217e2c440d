package store

import "testing"

// TestGrowBlocksKeepsSlots grows blocks past the first block's doublings
// and into a second block, writing each slot, and checks that every slot
// keeps its values, that the first block never outgrows blockVecs items,
// and that a slot shrinkBlocks gave back comes back zeroed.
func TestGrowBlocksKeepsSlots(t *testing.T) {
	const width = 3
	var blocks [][]int16
	n := blockVecs + 100
	for i := range n {
		growBlocks(&blocks, i, width)
		b := blocks[i/blockVecs]
		for j := range width {
			if got := b[(i%blockVecs)*width+j]; got != 0 {
				t.Fatalf("slot %d element %d of a new slot = %d, want 0", i, j, got)
			}
			b[(i%blockVecs)*width+j] = int16(i*width + j + 1)
		}
	}
	if len(blocks) != 2 || cap(blocks[0]) != blockVecs*width {
		t.Fatalf("%d blocks, the first of capacity %d, want 2 and %d", len(blocks), cap(blocks[0]), blockVecs*width)
	}
	for i := range n {
		for j := range width {
			if got, want := blocks[i/blockVecs][(i%blockVecs)*width+j], int16(i*width+j+1); got != want {
				t.Fatalf("slot %d element %d = %d, want %d", i, j, got, want)
			}
		}
	}
	for range 150 { // back into the first block
		shrinkBlocks(&blocks, width)
	}
	for i := n - 150; i < n; i++ {
		growBlocks(&blocks, i, width)
		for j := range width {
			if got := blocks[i/blockVecs][(i%blockVecs)*width+j]; got != 0 {
				t.Fatalf("regrown slot %d element %d = %d, want 0", i, j, got)
			}
		}
	}
}

// BenchmarkGrowBlocks grows one space's blocks to a namespace's 1,000
// vectors of 384 int8 codes, as the vector index's place does.
func BenchmarkGrowBlocks(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var blocks [][]int8
		for i := range 1000 {
			growBlocks(&blocks, i, 384)
			blocks[len(blocks)-1][i*384] = 1
		}
	}
}
