package tasks_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestTransition(t *testing.T) {
	t.Parallel()

	legal := map[[2]tasks.Status]bool{
		{tasks.Pending, tasks.Processing}:   true,
		{tasks.Pending, tasks.Cancelled}:    true,
		{tasks.Processing, tasks.Completed}: true,
		{tasks.Processing, tasks.Failed}:    true,
		{tasks.Processing, tasks.Cancelled}: true,
		{tasks.Processing, tasks.Pending}:   true,
	}

	// Exhaustive over 1..5 x 1..5, plus invalid statuses on either side.
	for from := tasks.Status(0); from <= 6; from++ {
		for to := tasks.Status(0); to <= 6; to++ {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				t.Parallel()

				err := tasks.Transition(from, to)
				if legal[[2]tasks.Status{from, to}] {
					require.NoError(t, err, "Transition(%s, %s)", from, to)
					return
				}
				var te *tasks.TransitionError
				require.ErrorAs(t, err, &te, "Transition(%s, %s)", from, to)
				require.Equal(t, from, te.From)
				require.Equal(t, to, te.To)
				require.Equal(t, from.Terminal(), errors.Is(err, tasks.ErrTerminal),
					"Transition(%s, %s) matches ErrTerminal", from, to)
				require.Contains(t, err.Error(), from.String())
			})
		}
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()

	for _, s := range tasks.Statuses() {
		err := error(&tasks.StatusError{Op: "renew", Status: s, Want: tasks.Processing})
		require.Equal(t, s.Terminal(), errors.Is(err, tasks.ErrTerminal), "StatusError for %s", s)
		require.Contains(t, err.Error(), "renew task: status is "+s.String())
	}
}
