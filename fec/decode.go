package fec

import "fmt"

// Polynomials in the decoder are slices of coefficients, lowest degree
// first. A codeword cw of n bytes is the polynomial c(x) = sum cw[i] x^(n-1-i):
// the byte at position i sits at power n-1-i, and its locator is 2^(n-1-i).

// decodeCodeword corrects cw in place: cw is one codeword, message then
// parity (k+roots = 255 bytes, or fewer for a shortened codeword: n bytes,
// roots < n <= 255, as if preceded by zeros). erasures lists positions in cw
// known (or suspected) to be wrong; duplicates are ignored. It corrects any
// combination of e errors at unknown positions and f erasures with
// 2e + f <= roots, and returns the number of bytes it changed.
//
// When the codeword is beyond that, it returns an error wrapping
// ErrTooManyErrors and leaves cw unchanged, except in the cases no decoder
// can detect: an error pattern that happens to be within reach of another
// codeword is "corrected" to that one (possible only with unknown errors,
// never with erasures alone, since more than roots erasures is refused and up
// to roots are always right). Every correction is checked: the result is
// always a codeword.
func decodeCodeword(roots int, cw []byte, erasures []int) (corrected int, err error) {
	if err := checkRoots(roots); err != nil {
		return 0, err
	}
	n := len(cw)
	if n <= roots || n > N {
		return 0, fmt.Errorf("fec: codeword of %d bytes, want %d to %d", n, roots+1, N)
	}
	// Locator exponents (powers) of the erasures, without duplicates.
	var seen [N]bool
	var eras []int
	for _, pos := range erasures {
		if pos < 0 || pos >= n {
			return 0, fmt.Errorf("fec: erasure position %d outside the codeword (0 to %d)", pos, n-1)
		}
		if !seen[pos] {
			seen[pos] = true
			eras = append(eras, n-1-pos)
		}
	}
	if len(eras) > roots {
		return 0, fmt.Errorf("%w: %d erasures, more than the %d parity bytes", ErrTooManyErrors, len(eras), roots)
	}

	s := syndromes(cw, roots)
	if isZero(s) {
		return 0, nil
	}

	// Erasure locator: gamma(x) = prod (1 - X x) over the erasures.
	gamma := []byte{1}
	for _, p := range eras {
		gamma = polyMulLinear(gamma, gfPow2(p))
	}
	f := len(eras)

	// Forney syndromes: the coefficients f..roots-1 of gamma(x)*S(x) are the
	// syndromes of the errors alone (the erasures cancel out), to which
	// Berlekamp-Massey fits the error locator sigma.
	gs := polyMulTrunc(gamma, s, roots)
	sigma := berlekampMassey(gs[f:])
	if e := len(sigma) - 1; 2*e > roots-f {
		return 0, fmt.Errorf("%w: more than %d errors with %d erasures", ErrTooManyErrors, (roots-f)/2, f)
	}

	// Errata locator and evaluator: lambda = sigma*gamma,
	// omega = S*lambda mod x^roots.
	lambda := polyMul(sigma, gamma)
	omega := polyMulTrunc(s, lambda, roots)
	deg := len(lambda) - 1

	// Chien search over the codeword's positions, then Forney: with first
	// consecutive root 2^0 the value at locator X is
	// X * omega(1/X) / lambda'(1/X).
	fixed := make([]byte, n)
	copy(fixed, cw)
	found := 0
	for pos := range n {
		xinv := gfPow2(-(n - 1 - pos))
		if polyEval(lambda, xinv) != 0 {
			continue
		}
		found++
		den := derivEval(lambda, xinv)
		if den == 0 {
			return 0, fmt.Errorf("%w: repeated errata locator root", ErrTooManyErrors)
		}
		v := gfMul(gfInv(xinv), gfDiv(polyEval(omega, xinv), den))
		if v != 0 {
			fixed[pos] ^= v
			corrected++
		}
	}
	if found != deg {
		// Some roots of lambda are not positions of this codeword (or are
		// missing): the errata cannot be located.
		return 0, fmt.Errorf("%w: errata locator of degree %d has %d roots in the codeword", ErrTooManyErrors, deg, found)
	}
	if !isZero(syndromes(fixed, roots)) {
		return 0, fmt.Errorf("%w: correction does not yield a codeword", ErrTooManyErrors)
	}
	copy(cw, fixed)
	return corrected, nil
}

// syndromes returns S_j = c(2^j) for j = 0..roots-1. Since g(2^j) = 0,
// S_j = rem(2^j) where rem = c mod g: the parity recomputed from the
// received message plus the received parity. The table encoder gets rem in
// one step per byte, which leaves roots evaluations of a polynomial of
// degree roots-1 instead of roots evaluations of degree n-1.
func syndromes(cw []byte, roots int) []byte {
	n := len(cw)
	var remBuf [MaxRoots]byte
	rem := remBuf[:roots] // rem[i] is the coefficient of x^(roots-1-i)
	encoderFor(roots).codeword(cw[:n-roots], rem)
	zero := true
	for i, q := range cw[n-roots:] {
		rem[i] ^= q
		zero = zero && rem[i] == 0
	}
	s := make([]byte, roots)
	if zero {
		return s
	}
	for j := range roots {
		// Horner: acc = acc*2^j + rem[i].
		acc := byte(0)
		for _, c := range rem {
			if acc != 0 {
				acc = gfExp[gfLog[acc]+j]
			}
			acc ^= c
		}
		s[j] = acc
	}
	return s
}

func isZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// polyMulLinear returns p(x) * (1 - a x) (= p(x) * (1 + a x)).
func polyMulLinear(p []byte, a byte) []byte {
	r := make([]byte, len(p)+1)
	for i, c := range p {
		r[i] ^= c
		r[i+1] ^= gfMul(c, a)
	}
	return r
}

// polyMul returns a(x) * b(x).
func polyMul(a, b []byte) []byte {
	r := make([]byte, len(a)+len(b)-1)
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j, y := range b {
			r[i+j] ^= gfMul(x, y)
		}
	}
	return r
}

// polyMulTrunc returns a(x) * b(x) mod x^n, as n coefficients.
func polyMulTrunc(a, b []byte, n int) []byte {
	r := make([]byte, n)
	for i, x := range a {
		if x == 0 || i >= n {
			continue
		}
		for j, y := range b {
			if i+j >= n {
				break
			}
			r[i+j] ^= gfMul(x, y)
		}
	}
	return r
}

// polyEval returns p(x).
func polyEval(p []byte, x byte) byte {
	acc := byte(0)
	for i := len(p) - 1; i >= 0; i-- {
		acc = gfMul(acc, x) ^ p[i]
	}
	return acc
}

// derivEval returns p'(x). In characteristic 2 the even-degree terms of p
// vanish from the derivative: p'(x) = sum over odd i of p[i] x^(i-1).
func derivEval(p []byte, x byte) byte {
	acc := byte(0)
	x2 := gfMul(x, x)
	// Horner in x^2 over the odd coefficients, highest first.
	top := len(p) - 1
	if top%2 == 0 {
		top--
	}
	for i := top; i >= 1; i -= 2 {
		acc = gfMul(acc, x2) ^ p[i]
	}
	return acc
}

// berlekampMassey returns the shortest connection polynomial C (C[0] = 1,
// degree L, trailing zeros trimmed to degree L) that generates the sequence
// t: t[i] + C[1] t[i-1] + ... + C[L] t[i-L] = 0 for L <= i < len(t).
func berlekampMassey(t []byte) []byte {
	c := []byte{1}
	b := []byte{1}
	l, m := 0, 1
	bd := byte(1) // discrepancy when b was last updated
	for i := range t {
		d := t[i]
		for k := 1; k <= l && k < len(c); k++ {
			d ^= gfMul(c[k], t[i-k])
		}
		if d == 0 {
			m++
			continue
		}
		coef := gfDiv(d, bd)
		// c - coef * x^m * b
		next := make([]byte, max(len(c), len(b)+m))
		copy(next, c)
		for k, v := range b {
			next[k+m] ^= gfMul(coef, v)
		}
		if 2*l <= i {
			b = c
			l = i + 1 - l
			bd = d
			m = 1
		} else {
			m++
		}
		c = next
	}
	// c has degree at most l; give it exactly l+1 coefficients. (A zero
	// c[l] means no valid error locator: the caller's root count fails.)
	if len(c) > l+1 {
		c = c[:l+1]
	}
	for len(c) < l+1 {
		c = append(c, 0)
	}
	return c
}
