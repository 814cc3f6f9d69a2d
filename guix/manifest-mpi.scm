;;; guix/manifest-mpi.scm -- add-on for MPI runs: combine it with one variant.
;;;
;;;   guix time-machine -C guix/channels.scm -- shell --pure --preserve='^SLURM' \
;;;     --preserve='^PMI' -m guix/manifest.scm -m guix/manifest-mpi.scm -- ...
;;;
;;; python-mpi4py, and the very Open MPI it is built against (its `openmpi'
;;; input: Open MPI 4.1 in Guix 1.5), so that the profile's `mpiexec' and the
;;; ranks' libmpi are the same MPI.  "openmpi" by name would be the newest
;;; Open MPI (5.x), another MPI than mpi4py's.  Under Slurm, start the ranks
;;; with `srun --mpi=pmix' (Guix's Open MPI is built with PMIx; see
;;; docs/guix.md) or with this profile's `mpiexec'.
;;; See guix/manifest.scm for the list of variants.

(use-modules (guix profiles)
             (guix packages)                  ;package-inputs
             (gnu packages)                   ;specification->package
             (ice-9 match))

(define python-mpi4py (specification->package "python-mpi4py"))

(define mpi4py-openmpi
  ;; The Open MPI that python-mpi4py links to.
  (match (assoc-ref (package-inputs python-mpi4py) "openmpi")
    ((openmpi . _) openmpi)
    (_ (error "python-mpi4py has no openmpi input"))))

(packages->manifest (list mpi4py-openmpi python-mpi4py))
