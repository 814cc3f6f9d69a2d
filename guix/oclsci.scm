;;; guix/oclsci.scm -- Guix package for oclsci, built from this checkout.
;;;
;;; Usage (from the repository root; see docs/guix.md):
;;;   guix time-machine -C guix/channels.scm -- build -f guix/oclsci.scm
;;;   guix time-machine -C guix/channels.scm -- shell -f guix/oclsci.scm pocl -- oclsci --help
;;;   guix time-machine -C guix/channels.scm -- shell -D -f guix/oclsci.scm   # hacking
;;;
;;; The source is the Git checkout containing this file, restricted to the
;;; files Git tracks (untracked and ignored files are left out, so `git add'
;;; new files before building).  The check phase runs the test suite on PoCL,
;;; the CPU OpenCL implementation, so the build needs no GPU.
;;;
;;; The last expression of this file is the package, as `guix shell -f',
;;; `guix build -f' and guix/manifest*.scm expect.

(use-modules (guix packages)
             (guix gexp)
             (guix git-download)              ;git-predicate
             (guix utils)                     ;current-source-directory
             (guix build-system pyproject)
             ((guix licenses) #:prefix license:)
             (gnu packages))                  ;specification->package

;; Keep in step with `version' in pyproject.toml (tests/test_guix.py checks it).
(define %oclsci-version "0.1.0")

(define %oclsci-root
  ;; This file lives in guix/, one level below the repository root.
  (string-append (current-source-directory) "/.."))

(define oclsci-vcs-file?
  ;; True for files under version control; everything when not in a Git
  ;; checkout (an unpacked source tarball, for instance).
  (or (git-predicate %oclsci-root)
      (const #t)))

(define oclsci
  (package
    (name "oclsci")
    (version %oclsci-version)
    (source (local-file ".." "oclsci-checkout"
                        #:recursive? #t
                        #:select? oclsci-vcs-file?))
    (build-system pyproject-build-system)
    (arguments
     (list
      ;; Tests that need Slurm daemons, mpiexec or the Oclgrind simulator
      ;; cannot run in the build container (markers from pyproject.toml).
      #:test-flags
      #~(list "-m" "not slurm and not mpi and not oclgrind")
      #:phases
      #~(modify-phases %standard-phases
          (add-before 'check 'use-pocl
            (lambda _
              ;; pyopencl dlopens ocl-icd's libOpenCL, which reads ICD
              ;; files from OCL_ICD_VENDORS: point it at PoCL only.
              (setenv "OCL_ICD_VENDORS"
                      (string-append #$(this-package-native-input "pocl")
                                     "/etc/OpenCL/vendors"))
              ;; The build user's HOME does not exist; pyopencl and PoCL
              ;; write their kernel caches below it.
              (setenv "HOME" "/tmp")
              (setenv "POCL_CACHE_DIR" "/tmp/pocl-cache")
              ;; hwloc (used by PoCL) fails when /sys is missing, as in the
              ;; build container: give it a synthetic topology, as Guix's
              ;; own pocl package does for its tests.
              (setenv "HWLOC_SYNTHETIC" "4"))))))
    (native-inputs
     (map specification->package
          '("python-hatchling"                ;build backend (pyproject.toml)
            "python-pytest"
            "python-hypothesis"
            "python-jsonschema"
            "pocl")))                         ;OpenCL on the CPU, for the tests
    (propagated-inputs
     (map specification->package
          '("python-pyopencl"
            "python-numpy"
            "python-mako"
            "python-click"
            "python-pillow")))
    ;; oclsci reaches OpenCL drivers through ocl-icd (pyopencl's libOpenCL),
    ;; which reads OCL_ICD_VENDORS.  Declaring the search path here makes
    ;; `guix shell' point it at the profile's etc/OpenCL/vendors whenever the
    ;; profile has an ICD (pocl, rocm-opencl-runtime); the declaration is the
    ;; same as opencl-icd-loader's, so the two merge.  With no ICD in the
    ;; profile (NVIDIA: the driver comes from the host), the variable is left
    ;; alone and may be set by the user and kept with --preserve.
    (native-search-paths
     (list (search-path-specification
            (variable "OCL_ICD_VENDORS")
            (files '("etc/OpenCL/vendors"))
            (separator #f))))
    ;; No public home page is recorded in the repository yet.
    (home-page #f)
    (synopsis "Vendor-neutral OpenCL toolkit for scientists on clusters")
    (description
     "oclsci is a vendor-neutral OpenCL toolkit written in Python: Jacobi
reconstruction, Mandelbrot, elementwise kernels generated from Mako templates,
MPI and Slurm helpers.  It runs on any OpenCL implementation (PoCL on CPUs,
ROCm on AMD GPUs, the host driver on NVIDIA GPUs).")
    (license license:expat)))

oclsci
