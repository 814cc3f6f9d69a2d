;;; guix/oclsci.scm -- Guix package for oclsci, built from this checkout.
;;;
;;; Usage (from the repository root; see docs/guix.md):
;;;   guix time-machine -C guix/channels.scm -- build -f guix/oclsci.scm
;;;   guix time-machine -C guix/channels.scm -- shell -f guix/oclsci.scm pocl -- oclsci --help
;;;   guix time-machine -C guix/channels.scm -- shell -D -f guix/oclsci.scm   # hacking
;;;
;;; The source is the Git checkout containing this file, restricted to the
;;; files Git tracks (untracked and ignored files are left out, so `git add'
;;; new files before building).
;;;
;;; The build does not run the test suite: it needs an OpenCL device, and a
;;; package whose build runs it on PoCL would pull PoCL and LLVM into every
;;; variant (AMD and NVIDIA included) and re-run the tests whenever a job
;;; rebuilds the checkout.  The suite runs in CI and, under Guix, with
;;;   guix shell -m guix/manifest.scm -m guix/manifest-dev.scm -- python3 -m pytest
;;; (docs/guix.md).  The build still imports the package (sanity check).
;;;
;;; NumPy and Mako are the very packages that python-pyopencl propagates, not
;;; the newest packages of those names: Guix has several python-numpy (1.26
;;; and 2.x) and a profile holding two of them is refused by `guix package'
;;; ("conflicting entries") and silently merged by `guix shell'.
;;; guix/check.sh evaluates this file and the manifests with a real Guix.
;;;
;;; The last expression of this file is the package, as `guix shell -f',
;;; `guix build -f' and guix/manifest*.scm expect.

(use-modules (ice-9 match)
             (guix packages)
             (guix gexp)
             (guix git-download)              ;git-predicate
             (guix utils)                     ;current-source-directory
             (guix build-system pyproject)
             ((guix licenses) #:prefix license:)
             (gnu packages))                  ;specification->package

(define (propagated-input package name)
  ;; The package that PACKAGE propagates under NAME, or an error.
  (match (assoc-ref (package-propagated-inputs package) name)
    ((input . _) input)
    (_ (error (string-append (package-name package)
                             " does not propagate " name)))))

;; Keep in step with `version' in pyproject.toml (tests/tools/test_guix.py checks it).
(define %oclsci-version "0.1.0")

(define %oclsci-root
  ;; This file lives in guix/, one level below the repository root.
  (string-append (current-source-directory) "/.."))

(define oclsci-vcs-file?
  ;; True for files under version control; everything when not in a Git
  ;; checkout (an unpacked source tarball, for instance).
  (or (git-predicate %oclsci-root)
      (const #t)))

;; The package, built from this checkout.
(define oclsci
  (package
    (name "oclsci")
    (version %oclsci-version)
    (source (local-file ".." "oclsci-checkout"
                        #:recursive? #t
                        #:select? oclsci-vcs-file?))
    (build-system pyproject-build-system)
    (arguments
     ;; See the head of this file: the suite runs outside the build.
     (list #:tests? #f))
    (native-inputs
     (list (specification->package "python-hatchling"))) ;build backend
    (propagated-inputs
     ;; (Looked up in this field, which is evaluated lazily: `guix lint -L'
     ;; loads this file while it lists packages.)
     (let ((python-pyopencl (specification->package "python-pyopencl")))
       (list python-pyopencl
             (propagated-input python-pyopencl "python-numpy")
             (propagated-input python-pyopencl "python-mako")
             (specification->package "python-click")
             (specification->package "python-pillow"))))
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
    ;; #f: oclsci has no public URL yet; set it here when it is published.
    ;; Guix accepts #f (the package evaluates and builds); `guix lint's
    ;; home-page checker reports it ("invalid value for home page"), but that
    ;; checker is a network one, which guix/check.sh's `lint --no-network'
    ;; leaves out.  Do not put a made-up address here.
    (home-page #f)
    (synopsis "Vendor-neutral OpenCL toolkit for scientists on clusters")
    (description
     "oclsci is a vendor-neutral OpenCL toolkit written in Python: Jacobi
reconstruction, Mandelbrot, elementwise kernels generated from Mako templates,
MPI and Slurm helpers.  It runs on any OpenCL implementation (PoCL on CPUs,
ROCm on AMD GPUs, the host driver on NVIDIA GPUs).")
    (license license:expat)))

oclsci
