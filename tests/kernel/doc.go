// Package kernel holds tests only: they open veritygen's trees with Linux's
// own dm-verity, in a Debian kernel booted under qemu. See README.md.
package kernel
