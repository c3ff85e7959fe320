package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Message is a message a matched probe (Mprobe, Improbe) took out of
// matching (MPI_Message): no receive or probe sees it any more, so two
// goroutines probing for one message cannot both get it, as they can with
// Probe then Recv. Receive it once, with Recv or Irecv, from any goroutine;
// a probe from ProcNull gives a message of no data from ProcNull
// (MPI_MESSAGE_NO_PROC).
type Message struct{ in core.Message }

func faceMessage(m *core.Message) *Message { return (*Message)(unsafe.Pointer(m)) }
func coreMessage(m *Message) *core.Message { return (*core.Message)(unsafe.Pointer(m)) }

// Mprobe blocks until a message from src (or AnySource) with tag (or
// AnyTag) is there, takes it out of matching and returns it with its status
// (use CountOf to size the buffer).
func (c *Comm) Mprobe(src, tag int) (*Message, Status, error) {
	m, st, err := coreComm(c).Mprobe(src, tag)
	return faceMessage(m), Status(st), c.fail(err)
}

// Improbe is the nonblocking Mprobe: it reports whether a message was
// there (and is now the returned one's).
func (c *Comm) Improbe(src, tag int) (*Message, Status, bool, error) {
	m, st, ok, err := coreComm(c).Improbe(src, tag)
	return faceMessage(m), Status(st), ok, c.fail(err)
}

// Recv receives the message into buf (MPI_Mrecv). A message larger than buf
// fails with ErrTruncate, the status giving its real size; receiving a
// message twice is an ErrRequest.
func (m *Message) Recv(buf Buffer) (Status, error) {
	st, err := coreMessage(m).Recv(cb(buf))
	return Status(st), face(err)
}

// Irecv starts receiving the message into buf (MPI_Imrecv).
func (m *Message) Irecv(buf Buffer) (*Request, error) {
	r, err := coreMessage(m).Irecv(cb(buf))
	return faceRequest(r), face(err)
}

// SendrecvReplace sends buf to dest and receives into buf from src
// (MPI_Sendrecv_replace). The outgoing data is copied aside first (device
// buffers through host memory), so the incoming message may land in buf
// while the outgoing one is still on its way; a message larger than buf
// fails with ErrTruncate.
func (c *Comm) SendrecvReplace(buf Buffer, dest, sendtag, src, recvtag int) (Status, error) {
	st, err := coreComm(c).SendrecvReplace(cb(buf), dest, sendtag, src, recvtag)
	return Status(st), c.fail(err)
}

// Rsend sends in ready mode (MPI_Rsend): the caller promises that the
// matching receive is posted. gompix gains nothing from the promise and
// sends as Send does, which MPI allows.
func (c *Comm) Rsend(buf Buffer, dest, tag int) error {
	return c.fail(coreComm(c).Rsend(cb(buf), dest, tag))
}

// Irsend starts a ready-mode send (MPI_Irsend), as Isend.
func (c *Comm) Irsend(buf Buffer, dest, tag int) (*Request, error) {
	r, err := coreComm(c).Irsend(cb(buf), dest, tag)
	return faceRequest(r), c.fail(err)
}

// Testany tests the active requests once each, in order, and reports the
// first that has completed: its index, true, its status and error. With no
// active request it reports -1 and true (MPI_UNDEFINED, flag true); with
// none completed, -1 and false.
func Testany(rs ...*Request) (int, bool, Status, error) {
	i, ok, st, err := core.Testany(reqs(rs)...)
	return i, ok, Status(st), face(err)
}

// Waitsome waits until at least one active request has completed and
// reports every one that has by then: their indices in rs, their statuses,
// and their errors joined. With no active request the indices are nil
// (MPI_UNDEFINED).
func Waitsome(rs ...*Request) ([]int, []Status, error) {
	idx, sts, err := core.Waitsome(reqs(rs)...)
	return idx, statuses(sts), face(err)
}

// Testsome tests every active request once and reports those that have
// completed, as Waitsome does, without waiting: the indices are empty (not
// nil) when requests are active but none has completed, nil when none is
// active.
func Testsome(rs ...*Request) ([]int, []Status, error) {
	idx, sts, err := core.Testsome(reqs(rs)...)
	return idx, statuses(sts), face(err)
}

// BsendOverhead is the room a buffered message takes in the attached
// buffer beyond its data (MPI_BSEND_OVERHEAD): a buffer of
// n*(size+BsendOverhead) bytes holds n messages of size bytes at once
// (sizes rounded up to 8 bytes).
const BsendOverhead = core.BsendOverhead

// BufferAttach gives MPI buf for buffered sends (MPI_Buffer_attach). One
// buffer at a time: attaching a second, or a nil one, is an ErrBuffer.
func BufferAttach(buf []byte) error { return face(core.BufferAttach(buf)) }

// BufferDetach waits until every buffered send has left the attached
// buffer, then gives the buffer back (MPI_Buffer_detach). With no buffer
// attached it is an ErrBuffer. The errors of buffered sends that failed
// after Bsend returned come back here, joined.
func BufferDetach() ([]byte, error) {
	b, err := core.BufferDetach()
	return b, face(err)
}

// Bsend sends buf to dest in buffered mode (MPI_Bsend): the data is copied
// into the attached buffer and sent from there, so Bsend returns at once
// and buf is free. Without an attached buffer, or without room in it for
// the message, it is an ErrBuffer and nothing is sent.
func (c *Comm) Bsend(buf Buffer, dest, tag int) error {
	return c.fail(coreComm(c).Bsend(cb(buf), dest, tag))
}

// Ibsend is the nonblocking Bsend (MPI_Ibsend): the copy into the attached
// buffer is made at once, so the request it returns is complete (its first
// Wait or Test reports it).
func (c *Comm) Ibsend(buf Buffer, dest, tag int) (*Request, error) {
	r, err := coreComm(c).Ibsend(cb(buf), dest, tag)
	return faceRequest(r), c.fail(err)
}
