// splice(2) moves bytes between a socket and a pipe inside the kernel: a
// relay that splices socket → pipe → socket hands the pages on instead of
// copying every byte into user space and back (`sluice proxy`'s tunnels).
import CShim
import Glibc

extension FileDescriptor {
    /// Moves up to `count` bytes from this descriptor to `destination`; one of
    /// the two must be a pipe. The pipe side never blocks (SPLICE_F_NONBLOCK);
    /// a socket side must be non-blocking itself. `.value(0)`: the source's
    /// end of stream. `.wouldBlock`: nothing to read, or no room to write.
    public func splice(to destination: borrowing FileDescriptor, count: Int) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { cshim_splice(rawValue, destination.rawValue, count, cshim_SPLICE_F_MOVE | cshim_SPLICE_F_NONBLOCK) }
    }
}
