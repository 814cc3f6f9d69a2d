;;; guix/manifest-mpi.scm -- add-on for MPI runs: combine it with one variant.
;;;
;;;   guix time-machine -C guix/channels.scm -- shell --pure --preserve='^SLURM' \
;;;     --preserve='^PMI' -m guix/manifest.scm -m guix/manifest-mpi.scm -- ...
;;;
;;; python-mpi4py is built on openmpi (Open MPI 4, with Slurm PMI support).
;;; See guix/manifest.scm for the list of variants.

(specifications->manifest
 '("openmpi"
   "python-mpi4py"))
