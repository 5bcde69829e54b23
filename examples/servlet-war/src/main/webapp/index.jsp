<%@ page contentType="text/html; charset=UTF-8" pageEncoding="UTF-8" %>
<!DOCTYPE html>
<html><head><title>servlet-war</title>
<link rel="stylesheet" href="${pageContext.request.contextPath}/static/app.css"></head>
<body>
<h1>Hello, ${empty param.name ? 'world' : param.name}!</h1>
<p>context: [${pageContext.request.contextPath}]; started by listener: ${applicationScope.startedBy}</p>
</body></html>
