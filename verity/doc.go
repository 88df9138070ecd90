// Package verity does what veritysetup does with dm-verity hash trees, for
// Go programs: the commands veritygen and veritycheck are thin fronts on
// it. Its verbs take file paths (regular files or block devices) and
// options structs whose zero values are veritysetup's defaults:
//
//   - Format builds the tree of an image and writes it, byte for byte as
//     `veritysetup format` does: into a file of its own, into the image at
//     an offset, or appended as avbtool lays out Android images, with
//     Reed-Solomon error correction if asked. PlanFormat lays out the same
//     without writing anything.
//   - Verify checks an image and its tree against a root hash, as
//     `veritysetup verify` does, but lists every corrupted block; with the
//     error-correction parity it says what it can rebuild, and with
//     VerifyOptions.Repair writes the repair back.
//   - ReadSuperblock reads a tree's parameters (`veritysetup dump`).
//   - Open returns an io.ReaderAt that checks every block it reads against
//     the tree, as the kernel does after `veritysetup open`.
//   - Table gives the kernel's dm-verity table line and the dm-mod.create=
//     and Android dm= boot arguments that load it.
//   - OpenSource reads a raw image (its holes hashed once, not read), a
//     block device, or an Android sparse image as the image it expands to.
//   - PlanRepair and RepairPlan.Apply do error correction on any
//     io.ReaderAt and io.WriterAt, for callers that keep images elsewhere.
//   - SignRootHash makes the PKCS#7 signature of a root hash that the
//     kernel checks when a device is opened with root_hash_sig_key_desc
//     (`veritysetup open --root-hash-signature`), byte for byte as openssl
//     smime makes it, with any crypto.Signer (FormatOptions.Sign makes it
//     with the tree); VerifyRootHashSignature checks one as the kernel
//     would against trusted certificates; RootHashSignatureJSON and
//     ParseRootHashSignatureFile write and read systemd's verity signature
//     JSON; LoadSigningKey (or ReadSigningKey) and LoadCertificates read
//     PEM keys and certificates.
//   - Activate opens an image as a dm-verity device of Linux's
//     device-mapper, as `veritysetup open` does (files through loop
//     devices), so that the kernel checks every read; Status says what
//     the kernel says of such a device (veritysetup's too), Deactivate
//     closes it, as `veritysetup status` and `close` do. They use the
//     packages dm and loop, which talk to the kernel in Go.
//
// Nothing a caller did not name for writing is destroyed: every output is
// opened and locked before anything is hashed, a new tree appears under
// its name only when complete, and an existing output that does not look
// like one this package writes is refused unless FormatOptions.Force
// (FormatOptions.InPlace writes into it instead, as veritysetup does).
// Memory stays bounded for any input.
//
// An Append to a regular file keeps this invariant: killed at any moment,
// it leaves the file as it was, the finished image, or a file ending in a
// ResumeRecord of the image's original size, which the same Format call
// finishes into the finished image. The record is written before anything
// else, past everything the file holds and past where the finished image
// ends; the run's last step cuts the file there, dropping the record. A
// failure or a cancellation cuts the file back to the image. Run again on
// its own output, Append finds the tree (and parity) it would append
// already there and, when the salt is given (checking the digests), writes
// it again in place; it refuses an image it cannot check, or one that ends
// in an AVB footer (see package avb), unless told where the image ends
// (FormatOptions.OriginalSize) or Force.
//
// Errors are *Error values whose Kind tells a caller's mistake (KindParam,
// with the option in Field) from unusable input (KindInput), corruption
// (KindCorrupt), a refusal to destroy something or a lock held by another
// process (KindRefused), what the system cannot do (KindSystem: no
// device-mapper, no root), I/O trouble (KindIO), a root hash signature
// that does not verify (KindUntrusted) and a run stopped by its context
// (KindCanceled); errors.Is works with the sentinels ErrParam, ErrInput,
// ErrCorrupt, ErrRefused, ErrSystem, ErrIO and ErrUntrusted, with
// context.Canceled and context.DeadlineExceeded, with fs.ErrNotExist for
// a missing input, and with the dm package's and the errno an error of
// the kernel's wraps. A verification that finds corruption is not an
// error: VerifyResult says what it found.
//
// The engines underneath are public too: merkle (geometry, builder,
// verifier, verifying reader), fec (Reed-Solomon parity as veritysetup and
// the kernel use it), sparse (Android sparse images) and hashes (bulk
// SIMD hashing).
package verity
