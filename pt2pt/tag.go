package pt2pt

// Transport tags pack MPI matching information into 64 bits:
//
//	bits 63..45  context id (19 bits): the communicator, and whether the
//	             message belongs to point-to-point or to collectives
//	bit  44      descriptor: the payload is not the message but a
//	             transport-level descriptor of it (pt2pt/rndv's
//	             rendezvous requests and CUDA IPC descriptors); receives
//	             never match on it, so data and descriptors from one
//	             sender stay in one order
//	bits 43..24  source rank within the communicator (20 bits)
//	bits 23..0   MPI tag (24 bits)
//
// A receive matches with a mask: AnySource clears the rank bits, AnyTag the
// tag bits. Collectives use context id ctx+1 of their communicator, so they
// never match user messages. The top context pair (InternalContext) is
// reserved for messages transports exchange among themselves (IPC acks).
const (
	tagBits  = 24
	rankBits = 20
	descBits = 1
	ctxBits  = 19

	tagShift  = 0
	rankShift = tagBits
	descShift = tagBits + rankBits
	ctxShift  = tagBits + rankBits + descBits

	tagMask  uint64 = (1<<tagBits - 1) << tagShift
	rankMask uint64 = (1<<rankBits - 1) << rankShift
	ctxMask  uint64 = (1<<ctxBits - 1) << ctxShift

	// DescriptorBit marks a transport tag whose message is a descriptor
	// (see above). The engine never sets it and never matches on it; a
	// transport decorator that sends descriptors sets it on those messages
	// and reads it back from Result.Tag to tell them from data.
	DescriptorBit uint64 = 1 << descShift

	// MaxTag is the largest valid MPI tag (MPI_TAG_UB).
	MaxTag = 1<<tagBits - 1
	// MaxRanks bounds the size of a communicator.
	MaxRanks = 1 << rankBits
	// MaxContexts bounds the context ids communicators may use (two per
	// communicator); the pair above it is InternalContext's.
	MaxContexts = 1<<ctxBits - 2
	// InternalContext is the context id reserved for transport-internal
	// messages (never a communicator's).
	InternalContext = MaxContexts
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

// InternalTag is the transport tag of a transport-internal message from
// world rank src carrying id (24 bits) on InternalContext; receive it with
// mask InternalMask.
func InternalTag(src int, id uint32) uint64 {
	return packTag(InternalContext, src, int(id&MaxTag))
}

// InternalMask matches every field of an InternalTag.
const InternalMask = ctxMask | rankMask | tagMask

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
