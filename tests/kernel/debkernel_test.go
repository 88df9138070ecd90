package kernel

// Debian's kernel, fetched with apt and kept in a cache: the bootable
// image (uncompressed vmlinux when the kernel can be booted that way, which
// is twice as fast under TCG as the bzImage that decompresses itself) and
// the few modules the guest needs, decompressed, in load order.

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
)

// metaPackage is the Debian package whose dependency names the kernel.
const metaPackage = "linux-image-amd64"

// cacheLayout changes when what the cache holds changes, so that an old
// cache is not mistaken for a new one.
const cacheLayout = "v3"

// Modules the guest loads, by module name ('-' and '_' are the same), with
// their dependencies; those built into the kernel are skipped.
// loop: the activation tests (activate_test.go) attach files.
var rootModules = []string{"virtio_pci", "virtio_blk", "dm_verity", "loop"}

// Crypto algorithms dm-verity will ask for; each is found built in (its
// "crypto-NAME" alias in modules.builtin.modinfo) or as a module. Debian's
// 6.1 has no blake2s-256 (the kernel dropped its shash in 5.19): there
// dm-verity cannot open a blake2s-256 tree.
var cryptoAlgs = []string{"sha1", "sha256", "sha512", "blake2b-256",
	"sha224", "sha384", "sha3-256", "md5", "md4", "rmd160"}

// kernelImage is an unpacked kernel in the cache.
type kernelImage struct {
	Package string   `json:"package"`
	Version string   `json:"version"`
	Boot    string   `json:"boot"`    // file name passed to -kernel
	Modules []string `json:"modules"` // file names under modules/, in load order
	Builtin []string `json:"builtin"` // what was found built in (for the log)
	dir     string
}

func (k *kernelImage) bootPath() string { return filepath.Join(k.dir, k.Boot) }
func (k *kernelImage) modulePath(name string) string {
	return filepath.Join(k.dir, "modules", name)
}

// cacheDir is where unpacked kernels are kept: $VERITYTREE_KERNEL_CACHE, or
// veritytree-kernel under the user's cache directory ($XDG_CACHE_HOME or
// ~/.cache).
func cacheDir(t *testing.T) string {
	if d := os.Getenv("VERITYTREE_KERNEL_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "veritytree-kernel")
}

// unavailable fails the test in CI and skips it elsewhere: the kernel or a
// tool could not be had.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if testtool.InCI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// debianKernel returns the current Debian kernel, unpacked, downloading it
// when the cache lacks it.
func debianKernel(t *testing.T) *kernelImage {
	t.Helper()
	aptCache := testtool.Require(t, "apt-cache")
	aptGet := testtool.Require(t, "apt-get")
	dpkgDeb := testtool.Require(t, "dpkg-deb")
	root := cacheDir(t)

	pkg, version, err := resolveKernelPackage(aptCache)
	if err != nil {
		unavailable(t, "cannot resolve %s to a kernel package (run apt-get update): %v", metaPackage, err)
	}
	dir := filepath.Join(root, cacheLayout+"-"+pkg+"_"+version)
	if k, err := loadKernel(dir); err == nil {
		t.Logf("kernel %s %s from the cache %s", pkg, version, dir)
		return k
	}

	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, "unpack-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	dl := filepath.Join(tmp, "download")
	if err := os.Mkdir(dl, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), aptGet, "download", pkg+"="+version)
	cmd.Dir = dl
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "apt-get download %s=%s: %v\n%s", pkg, version, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("apt-get download %s left %d .deb files", pkg, len(debs))
	}
	unpacked := filepath.Join(tmp, "unpacked")
	if out, err := exec.CommandContext(t.Context(), dpkgDeb, "-x", debs[0], unpacked).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	os.Remove(debs[0])

	staged := filepath.Join(tmp, "staged")
	k, err := stageKernel(unpacked, staged, pkg, version)
	if err != nil {
		t.Fatalf("%s %s: %v", pkg, version, err)
	}
	// Another test process may have won the race: keep its copy.
	if err := os.Rename(staged, dir); err != nil {
		if k2, err2 := loadKernel(dir); err2 == nil {
			return k2
		}
		t.Fatalf("caching the kernel: %v", err)
	}
	k.dir = dir
	t.Logf("kernel %s %s downloaded and unpacked into %s", pkg, version, dir)
	pruneCache(root, dir)
	return k
}

// pruneCache removes the kernels other than keep (older versions, older
// layouts) and unpacking leftovers of runs killed more than an hour ago.
func pruneCache(root, keep string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if p == keep {
			continue
		}
		if strings.HasPrefix(e.Name(), "unpack-") {
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Hour {
				continue
			}
		} else if !strings.Contains(e.Name(), "-linux-image-") {
			continue
		}
		os.RemoveAll(p)
	}
}

// resolveKernelPackage finds the real kernel package behind the metapackage
// and its candidate version.
func resolveKernelPackage(aptCache string) (pkg, version string, err error) {
	out, err := exec.Command(aptCache, "depends", metaPackage).Output()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache depends %s: %w", metaPackage, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(strings.TrimLeft(strings.TrimSpace(line), "|"))
		if len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			pkg = f[1]
			break
		}
	}
	if pkg == "" {
		return "", "", fmt.Errorf("apt-cache depends %s names no linux-image-* package:\n%s", metaPackage, out)
	}
	out, err = exec.Command(aptCache, "policy", pkg).Output()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache policy %s: %w", pkg, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate:"); ok {
			version = strings.TrimSpace(v)
		}
	}
	if version == "" || version == "(none)" {
		return "", "", fmt.Errorf("no candidate version of %s:\n%s", pkg, out)
	}
	return pkg, version, nil
}

func loadKernel(dir string) (*kernelImage, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return nil, err
	}
	var k kernelImage
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, err
	}
	k.dir = dir
	if _, err := os.Stat(k.bootPath()); err != nil {
		return nil, err
	}
	return &k, nil
}

// stageKernel copies out of an unpacked kernel package what the guest
// needs, into dst: the boot image, the modules, kernel.json.
func stageKernel(unpacked, dst, pkg, version string) (*kernelImage, error) {
	vmlinuzs, _ := filepath.Glob(filepath.Join(unpacked, "boot", "vmlinuz-*"))
	mdirs, _ := filepath.Glob(filepath.Join(unpacked, "lib", "modules", "*"))
	if len(mdirs) == 0 { // merged /usr
		mdirs, _ = filepath.Glob(filepath.Join(unpacked, "usr", "lib", "modules", "*"))
	}
	if len(vmlinuzs) != 1 || len(mdirs) != 1 {
		return nil, fmt.Errorf("expected one boot/vmlinuz-* and one lib/modules/*, found %q and %q", vmlinuzs, mdirs)
	}
	if err := os.MkdirAll(filepath.Join(dst, "modules"), 0o755); err != nil {
		return nil, err
	}
	k := &kernelImage{Package: pkg, Version: version, dir: dst}

	bz, err := os.ReadFile(vmlinuzs[0])
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dst, "vmlinuz"), bz, 0o644); err != nil {
		return nil, err
	}
	k.Boot = "vmlinuz"
	if vmlinux, err := extractVmlinux(bz); err == nil && hasPVHNote(vmlinux) {
		if err := os.WriteFile(filepath.Join(dst, "vmlinux"), vmlinux, 0o644); err != nil {
			return nil, err
		}
		k.Boot = "vmlinux"
	}

	mods, builtin, err := selectModules(mdirs[0])
	if err != nil {
		return nil, err
	}
	k.Builtin = builtin
	for i, m := range mods {
		data, err := readModule(m.path)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%02d-%s.ko", i, m.name)
		if err := os.WriteFile(k.modulePath(name), data, 0o644); err != nil {
			return nil, err
		}
		k.Modules = append(k.Modules, name)
	}
	b, _ := json.MarshalIndent(k, "", "  ")
	return k, os.WriteFile(filepath.Join(dst, "kernel.json"), b, 0o644)
}

type module struct {
	name    string // normalized: '_' for '-'
	path    string
	depends []string
	aliases []string
}

func normName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// moduleSuffixes are the file name endings of (possibly compressed) modules.
var moduleSuffixes = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

func moduleBase(path string) (string, bool) {
	for _, s := range moduleSuffixes {
		if b, ok := strings.CutSuffix(filepath.Base(path), s); ok {
			return b, true
		}
	}
	return "", false
}

// selectModules finds the modules the guest must load, dependencies
// first. The package ships no modules.dep (depmod makes it on install), so
// dependencies come from each module's own .modinfo "depends=".
func selectModules(mdir string) (mods []*module, builtin []string, err error) {
	s := &moduleSet{loaded: map[string]*module{}, done: map[string]bool{}}
	if s.byName, err = packagedModules(mdir); err != nil {
		return nil, nil, err
	}
	s.builtin, s.builtinAliases = builtinModules(mdir)

	var roots []string
	for _, r := range rootModules {
		if s.builtin[normName(r)] {
			builtin = append(builtin, r)
			continue
		}
		roots = append(roots, normName(r))
	}
	for _, alg := range cryptoAlgs {
		if mod, ok := s.builtinAliases["crypto-"+alg]; ok {
			builtin = append(builtin, alg+" ("+mod+")")
			continue
		}
		name, err := cryptoModule(s.byName, s.info, alg)
		if err != nil {
			return nil, nil, err
		}
		roots = append(roots, name)
	}
	for _, r := range roots {
		if err := s.visit(r, nil); err != nil {
			return nil, nil, err
		}
	}
	return s.mods, builtin, nil
}

// packagedModules maps the name of each module under mdir/kernel to its
// path.
func packagedModules(mdir string) (map[string]string, error) {
	byName := map[string]string{}
	err := filepath.WalkDir(filepath.Join(mdir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if b, ok := moduleBase(p); ok && !d.IsDir() {
			byName[normName(b)] = p
		}
		return nil
	})
	return byName, err
}

// builtinModules reads which modules are built into the kernel
// (modules.builtin) and the aliases they answer to (alias -> module, from
// modules.builtin.modinfo); a file that is missing says none.
func builtinModules(mdir string) (map[string]bool, map[string]string) {
	mods := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(mdir, "modules.builtin")); err == nil {
		for _, line := range strings.Fields(string(b)) {
			if n, ok := moduleBase(line); ok {
				mods[normName(n)] = true
			}
		}
	}
	aliases := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(mdir, "modules.builtin.modinfo")); err == nil {
		for _, kv := range strings.Split(string(b), "\x00") {
			mod, rest, ok := strings.Cut(kv, ".")
			if a, ok2 := strings.CutPrefix(rest, "alias="); ok && ok2 {
				aliases[a] = mod
			}
		}
	}
	return mods, aliases
}

// moduleSet is what selectModules knows of the kernel's modules, and the
// modules it chose so far, dependencies first.
type moduleSet struct {
	byName         map[string]string // module name -> path
	builtin        map[string]bool
	builtinAliases map[string]string // alias -> module
	loaded         map[string]*module
	done           map[string]bool
	mods           []*module
}

// info reads the .modinfo of the packaged module name, once.
func (s *moduleSet) info(name string) (*module, error) {
	if m, ok := s.loaded[name]; ok {
		return m, nil
	}
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("module %s is neither built in nor in the package", name)
	}
	data, err := readModule(p)
	if err != nil {
		return nil, err
	}
	m, err := parseModinfo(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	m.path = p
	if m.name == "" {
		m.name = name
	}
	s.loaded[name] = m
	return m, nil
}

// visit adds name to the chosen modules after its dependencies,
// depth-first; path is the chain of users that led to it.
func (s *moduleSet) visit(name string, path []string) error {
	if s.done[name] || s.builtin[name] {
		return nil
	}
	if slices.Contains(path, name) {
		return fmt.Errorf("module dependency cycle: %v", append(path, name))
	}
	m, err := s.info(name)
	if err != nil {
		return err
	}
	for _, d := range m.depends {
		if err := s.visit(normName(d), append(path, name)); err != nil {
			return err
		}
	}
	s.done[name] = true
	s.mods = append(s.mods, m)
	return nil
}

// cryptoModule names the module that provides the crypto algorithm alg
// (its "crypto-ALG" alias): the generic C implementation where there is
// one, as the arch-specific ones refuse to load on CPUs without their
// instructions; else the one module there is (rmd160, md4 have no
// "_generic" in their names).
func cryptoModule(byName map[string]string, info func(string) (*module, error), alg string) (string, error) {
	var generic, other []string
	for name := range byName {
		if !strings.Contains(filepath.ToSlash(byName[name]), "/crypto/") {
			continue
		}
		m, err := info(name)
		if err != nil {
			return "", err
		}
		if !slices.Contains(m.aliases, "crypto-"+alg) {
			continue
		}
		if strings.HasSuffix(name, "_generic") {
			generic = append(generic, name)
		} else {
			other = append(other, name)
		}
	}
	sort.Strings(generic)
	sort.Strings(other)
	switch {
	case len(generic) > 0:
		return generic[0], nil
	case len(other) == 1:
		return other[0], nil
	case len(other) > 1:
		return "", fmt.Errorf("no generic module provides crypto-%s, and several others do: %v", alg, other)
	}
	return "", fmt.Errorf("no module provides crypto-%s, and it is not built in", alg)
}

// parseModinfo reads the name, dependencies and aliases from a module's
// .modinfo section (NUL-separated key=value strings).
func parseModinfo(ko []byte) (*module, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, err
	}
	s := f.Section(".modinfo")
	if s == nil {
		return nil, errors.New("no .modinfo section")
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	m := &module{}
	for _, kv := range strings.Split(string(data), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "name":
			m.name = normName(v)
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d != "" {
					m.depends = append(m.depends, d)
				}
			}
		case "alias":
			m.aliases = append(m.aliases, v)
		}
	}
	return m, nil
}

// readModule returns a module's ELF bytes, decompressed: busybox insmod
// takes plain .ko files only.
func readModule(path string) ([]byte, error) {
	switch {
	case strings.HasSuffix(path, ".ko"):
		return os.ReadFile(path)
	case strings.HasSuffix(path, ".ko.gz"):
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(z)
	case strings.HasSuffix(path, ".ko.xz"):
		return exec.Command("xz", "-dc", path).Output()
	case strings.HasSuffix(path, ".ko.zst"):
		return exec.Command("zstd", "-dc", path).Output()
	}
	return nil, fmt.Errorf("%s: not a module", path)
}

// extractVmlinux returns the uncompressed ELF kernel inside a bzImage: the
// setup header says where the payload is; its magic says how it was
// compressed.
func extractVmlinux(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage")
	}
	setupSects := int(bz[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	off := (setupSects+1)*512 + int(binary.LittleEndian.Uint32(bz[0x248:]))
	n := int(binary.LittleEndian.Uint32(bz[0x24c:]))
	if off < 0 || n <= 0 || off+n > len(bz) {
		return nil, errors.New("bzImage payload out of range")
	}
	payload := bz[off : off+n]
	var out []byte
	var err error
	switch {
	case bytes.HasPrefix(payload, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// The kernel appends the uncompressed size after the stream.
		cmd := exec.Command("xz", "-dc", "--single-stream")
		cmd.Stdin = bytes.NewReader(payload)
		out, err = cmd.Output()
	case bytes.HasPrefix(payload, []byte{0x1f, 0x8b}):
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(payload)); err == nil {
			z.Multistream(false)
			out, err = io.ReadAll(z)
		}
	case bytes.HasPrefix(payload, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		cmd := exec.Command("zstd", "-dc")
		cmd.Stdin = bytes.NewReader(payload)
		out, err = cmd.Output()
	default:
		return nil, fmt.Errorf("unknown payload compression % x", payload[:min(6, len(payload))])
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return nil, errors.New("payload is not an ELF file")
	}
	return out, nil
}

// hasPVHNote reports whether an ELF kernel carries the Xen PVH entry note
// (XEN_ELFNOTE_PHYS32_ENTRY), without which qemu cannot boot it directly.
func hasPVHNote(vmlinux []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			namesz := int(binary.LittleEndian.Uint32(b[0:]))
			descsz := int(binary.LittleEndian.Uint32(b[4:]))
			typ := binary.LittleEndian.Uint32(b[8:])
			nameEnd := 12 + (namesz+3)&^3
			end := nameEnd + (descsz+3)&^3
			if end > len(b) || namesz > len(b) {
				break
			}
			if typ == 18 && strings.TrimRight(string(b[12:12+namesz]), "\x00") == "Xen" {
				return true
			}
			b = b[end:]
		}
	}
	return false
}
