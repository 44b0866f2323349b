package reduce

import (
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Changeset applies a changeset-channel action to s. An error is kept only
// beside the status (or operation status) "error", so a recovered
// changeset carries no stale one.
func Changeset(s *ahp.ChangesetState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.ChangesetStatusChanged:
		s.Status, s.Error = a.Status, nil
		if a.Status == ahp.ChangesetError {
			s.Error = a.Error
		}
	case ahp.ChangesetFileSet:
		s.Files = upsert(s.Files, a.File, func(f ahp.ChangesetFile) bool { return f.ID == a.File.ID })
	case ahp.ChangesetFileRemoved:
		if i := fileIndex(s.Files, a.FileID); i >= 0 {
			s.Files = without(s.Files, i)
		}
	case ahp.ChangesetFilesReviewChanged:
		var files []ahp.ChangesetFile
		for i := range s.Files {
			if !slices.Contains(a.Files, s.Files[i].ID) {
				continue
			}
			if files == nil {
				files = fresh(s.Files)
			}
			reviewed := a.Reviewed
			files[i].Reviewed = &reviewed
		}
		if files != nil {
			s.Files = files
		}
	case ahp.ChangesetContentChanged:
		s.Files = a.Files
		if s.Files == nil {
			s.Files = []ahp.ChangesetFile{}
		}
		if a.Operations != nil {
			s.Operations = *a.Operations
		}
		s.Error = a.Error
	case ahp.ChangesetOperationsChanged:
		s.Operations = nil
		if a.Operations != nil {
			s.Operations = *a.Operations
		}
	case ahp.ChangesetOperationStatusChanged:
		i := slices.IndexFunc(s.Operations, func(o ahp.ChangesetOperation) bool { return o.ID == a.OperationID })
		if i < 0 {
			return
		}
		ops := fresh(s.Operations)
		ops[i].Status, ops[i].Error = a.Status, nil
		if a.Status == ahp.ChangesetError {
			ops[i].Error = a.Error
		}
		s.Operations = ops
	case ahp.ChangesetCleared:
		if len(s.Files) > 0 {
			s.Files = []ahp.ChangesetFile{}
		}
	}
}

func fileIndex(files []ahp.ChangesetFile, id string) int {
	return slices.IndexFunc(files, func(f ahp.ChangesetFile) bool { return f.ID == id })
}
