"""Status codes of the compiled per-point arms (ellipsoids and polytopes).

A compiled arm is played only with :data:`VERIFIED`; any other code makes SEGE fall back to a
provably safe choice and count the event under the code's name in :data:`STATUS`.
"""

#: The arm is finite, lies in the set exactly (``tol=0``, after pull-in) and, for a polytope,
#: carries a checked optimality certificate.
VERIFIED = 0
#: The computation gave a non-finite arm.
NOT_FINITE = 1
#: The arm could not be moved exactly into the set.
NOT_MEMBER = 2
#: A polytope's active-set solve ended without a certificate of optimality (its duality gap
#: exceeded the stated bound, or the iteration stopped).
NOT_CERTIFIED = 3

#: Name of each code, as reported in ``BatchArms.status`` and ``SEGE.fallback_reasons``.
STATUS = ("closed_form", "NotFinite", "NotMember", "NotCertified")
#: Why a compiled stage of a constraint-model policy played the safe arm: a status above (its
#: name; column 0 unused) or :data:`UNCERTIFIED`, an arm whose bound on the constraint failed
#: at the point played (the columns of such a stage record's ``reasons``).
UNCERTIFIED = len(STATUS)
FALLBACK_REASONS = (*STATUS, "Uncertified")
