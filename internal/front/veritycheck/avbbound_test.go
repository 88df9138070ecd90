package veritycheck

// The AVB report is bounded: a vbmeta of a million descriptors, or of one
// of 16 MiB, lists maxListedDescriptors and counts the rest, and shows
// names and values cut to maxDescribed bytes.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/veritytree/veritytree/avb"
)

func TestAVBReportBounded(t *testing.T) {
	const props = maxListedDescriptors + 500
	long := strings.Repeat("n", 3*maxDescribed)
	m := avbMake(t, 8, false, func(o *avb.HashtreeFooterOptions) {
		o.PartitionName = long
		o.SetupAsRootfsFromKernel = false
		o.Properties = nil
		for i := range props {
			o.Properties = append(o.Properties, avb.Property{Key: fmt.Sprintf("k%d", i), Value: []byte("v")})
		}
	})
	r := avbExpect(t, 0, nil, "--json", m.path)
	var j struct {
		AVB avbJSON `json:"avb"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	a := j.AVB
	if len(a.Descriptors) != maxListedDescriptors || a.DescriptorCount != props+1 || a.DescriptorsNotListed != props+1-maxListedDescriptors {
		t.Errorf("JSON lists %d descriptors, counts %d, %d not listed; want %d, %d, %d",
			len(a.Descriptors), a.DescriptorCount, a.DescriptorsNotListed, maxListedDescriptors, props+1, props+1-maxListedDescriptors)
	}
	cut := long[:maxDescribed] + fmt.Sprintf("... (%d bytes)", len(long))
	if a.PartitionName != cut || a.Descriptors[0].PartitionName != cut || strings.Contains(a.Descriptors[0].Text, long) {
		t.Errorf("the partition name is not cut to %d bytes: %q", maxDescribed, a.PartitionName)
	}
	r = avbExpect(t, 0, []string{fmt.Sprintf("avb: descriptors: %d more not listed (%d in all; avbtool info_image lists them all)",
		props+1-maxListedDescriptors, props+1)}, m.path)
	if n := strings.Count(r.stdout, "avb: descriptor: "); n != maxListedDescriptors {
		t.Errorf("the text report lists %d descriptors, want %d", n, maxListedDescriptors)
	}
}

// A property value of 256 bytes or more is shown by its size, as avbtool
// info_image shows it.
func TestAVBReportLongProperty(t *testing.T) {
	m := avbMake(t, 8, false, func(o *avb.HashtreeFooterOptions) {
		o.Properties = []avb.Property{{Key: "big", Value: []byte(strings.Repeat("a", 300))}}
	})
	avbExpect(t, 0, []string{"avb: descriptor: property: big = (300 bytes)"}, m.path)
}
