print("scmesh")
