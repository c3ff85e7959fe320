package pt2pt

// Transport tags pack MPI matching information into 64 bits:
//
//	bits 63..44  context id (20 bits): the communicator, and whether the
//	             message belongs to point-to-point or to collectives
//	bits 43..24  source rank within the communicator (20 bits)
//	bits 23..0   MPI tag (24 bits)
//
// A receive matches with a mask: AnySource clears the rank bits, AnyTag the
// tag bits. Collectives use context id ctx+1 of their communicator, so they
// never match user messages.
const (
	tagBits  = 24
	rankBits = 20
	ctxBits  = 20

	tagShift  = 0
	rankShift = tagBits
	ctxShift  = tagBits + rankBits

	tagMask  uint64 = (1<<tagBits - 1) << tagShift
	rankMask uint64 = (1<<rankBits - 1) << rankShift
	ctxMask  uint64 = (1<<ctxBits - 1) << ctxShift

	// MaxTag is the largest valid MPI tag (MPI_TAG_UB).
	MaxTag = 1<<tagBits - 1
	// MaxRanks bounds the size of a communicator.
	MaxRanks = 1 << rankBits
	// MaxContexts bounds the number of context ids (two per communicator).
	MaxContexts = 1 << ctxBits
)

// Wildcards and the null process, with MPI's meanings.
const (
	AnySource = -1
	AnyTag    = -1
	ProcNull  = -2
)

func packTag(ctx uint32, src, tag int) uint64 {
	return uint64(ctx)<<ctxShift | uint64(src)<<rankShift | uint64(tag)<<tagShift
}

// matchTag returns the tag and mask a receive posts.
func matchTag(ctx uint32, src, tag int) (uint64, uint64) {
	t := uint64(ctx) << ctxShift
	m := ctxMask
	if src != AnySource {
		t |= uint64(src) << rankShift
		m |= rankMask
	}
	if tag != AnyTag {
		t |= uint64(tag) << tagShift
		m |= tagMask
	}
	return t, m
}

func unpackTag(t uint64) (ctx uint32, src, tag int) {
	return uint32((t & ctxMask) >> ctxShift), int((t & rankMask) >> rankShift), int((t & tagMask) >> tagShift)
}
